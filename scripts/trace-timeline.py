#!/usr/bin/env python3
"""Draws the parts of one site's last run in an ACCEL_TRACE file as an SVG timeline: one
lane per device, one bar per part (its range in the bar's title), so a reader sees which
device ran what and where one waited.
Usage: scripts/trace-timeline.py TRACE.json OUT.svg [SITE-SUBSTRING] [--title TITLE]"""
import json
import sys


def events(path):
    text = open(path).read().rstrip()
    if not text.endswith("]"):
        text += "]"
    return json.loads(text)


def main():
    args = sys.argv[1:]
    title = None
    if "--title" in args:
        k = args.index("--title")
        title = args[k + 1]
        del args[k : k + 2]
    trace, out = args[0], args[1]
    only = args[2] if len(args) > 2 else None
    evs = events(trace)
    parts = [e for e in evs if e.get("cat") == "part"]
    # The last run of the site (of any site, without SITE-SUBSTRING) that ran parts.
    sites = [e for e in evs if e.get("cat") == "site" and (only is None or only in e["name"])]
    sites = [s for s in sites if any(s["ts"] <= p["ts"] <= s["ts"] + s["dur"] for p in parts)]
    if sites:
        last = max(sites, key=lambda s: s["ts"])
        lo, hi = last["ts"], last["ts"] + last["dur"]
        parts = [p for p in parts if lo <= p["ts"] <= hi]
    if not parts:
        sys.exit("no part events in the trace")
    devices = []
    for p in parts:
        d = p["args"]["device"]
        if d not in devices:
            devices.append(d)
    # Lanes in the order the trace first names them.
    t0 = min(p["ts"] for p in parts)
    t1 = max(p["ts"] + p["dur"] for p in parts)
    width, lane, left, top = 900, 34, 12 + 7 * max(len(d) for d in devices), 30
    scale = (width - left - 20) / max(t1 - t0, 1e-9)
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"]
    height = top + lane * len(devices) + 40
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18">{title or "parts of one site by device"}; {len(parts)} parts, {(t1 - t0) / 1e3:.1f} ms</text>',
    ]
    for k, d in enumerate(devices):
        y = top + k * lane
        svg.append(f'<text x="8" y="{y + lane / 2 + 4}">{d}</text>')
        svg.append(f'<line x1="{left}" y1="{y + lane - 2}" x2="{width - 20}" y2="{y + lane - 2}" stroke="#ddd"/>')
    for p in parts:
        k = devices.index(p["args"]["device"])
        x = left + (p["ts"] - t0) * scale
        w = max(p["dur"] * scale, 1.0)
        y = top + k * lane + 4
        a = p["args"]
        svg.append(
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{lane - 10}" fill="{colors[k % len(colors)]}" stroke="white">'
            f'<title>{p["name"]}: {a["lo"]}..{a["hi"]}, {p["dur"] / 1e3:.2f} ms</title></rect>'
        )
    for ms in range(0, int((t1 - t0) / 1e3) + 1, max(1, int((t1 - t0) / 1e3 / 8) or 1)):
        x = left + ms * 1e3 * scale
        svg.append(f'<text x="{x:.1f}" y="{height - 12}" fill="#666">{ms} ms</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
