//! The whole suite in one run: the classic benchmarks, the three case studies (Viterbi,
//! ODE, neural network) and the peers (Numba and JAX on the CPU, from
//! `benchmarks/peers/peers.py`, which installs them from PyPI; a missing peer is reported
//! as skipped). Every example runs in every available mode and is checked against its
//! sequential reference. Prints one line per example; with `--out DIR` writes
//! `DIR/examples.md` (the table) and, built with the feature `chart`, `DIR/examples.png`
//! (speedups over the sequential reference).
//!
//! `cargo run --release -p accel-examples --features chart --bin suite [-- --small] [--no-peers] [--classic] [--out DIR]`
//! (`--classic`: the classic benchmarks only, not the case studies).

use accel_examples::{classic, nn, ode, viterbi, Report};
#[cfg(feature = "chart")]
use plotters::prelude::*;
use std::collections::BTreeMap;

/// One column of the table and one series of the chart: a mode or a peer.
struct Series {
    name: String,
    /// Milliseconds per example name.
    ms: BTreeMap<&'static str, f64>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let small = args.iter().any(|a| a == "--small");
    let peers = !args.iter().any(|a| a == "--no-peers");
    let classic_only = args.iter().any(|a| a == "--classic");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let mut reports = vec![
        classic::sum(small),
        classic::dot(small),
        classic::saxpy(small),
        classic::black_scholes(small),
        classic::mandelbrot(small),
        classic::nbody(small),
        classic::kmeans(small),
        classic::kmeans_per_cluster(small),
    ];
    if !classic_only {
        reports.extend(viterbi::run(small).1);
        reports.push(ode::run(small).1);
        reports.push(nn::report(small));
    }
    for r in &reports {
        println!("{}", r.line());
    }
    let mut series: Vec<Series> = Vec::new();
    for r in &reports {
        for (mode, ms) in &r.modes {
            let name = mode.to_string();
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => {
                    s.ms.insert(r.name, *ms);
                }
                None => series.push(Series {
                    name,
                    ms: BTreeMap::from([(r.name, *ms)]),
                }),
            }
        }
    }
    let mut notes = Vec::new();
    if peers {
        let (found, skipped) = run_peers(small);
        series.extend(found);
        notes.extend(skipped);
    } else {
        notes.push("peers not run (--no-peers)".to_string());
    }
    for n in &notes {
        println!("{n}");
    }
    if let Some(dir) = out {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let md = format!(
            "# Examples\n\nEvery example checked against its sequential reference (plain Rust) in every mode, in one run of `cargo run --release -p accel-examples --bin suite -- --out benchmarks/results` on {cores} cores; times in ms (the compiling first call excluded), speedup over the sequential reference in parentheses. Numba and JAX run the classic benchmarks on the same data (`benchmarks/peers/peers.py`); the case studies have no peer versions.\n\n{}\n{}\n\n![speedups](examples.png)\n",
            table(&reports, &series),
            notes.iter().map(|n| format!("- {n}\n")).collect::<String>()
        );
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {dir}: {e}"));
        std::fs::write(format!("{dir}/examples.md"), md)
            .unwrap_or_else(|e| panic!("cannot write {dir}/examples.md: {e}"));
        #[cfg(feature = "chart")]
        chart(&format!("{dir}/examples.png"), &reports, &series, cores)
            .unwrap_or_else(|e| panic!("cannot draw {dir}/examples.png: {e}"));
        #[cfg(not(feature = "chart"))]
        println!("no chart: build with `--features chart` to draw {dir}/examples.png");
    }
}

/// Runs the peers' script; returns their series and a line for each skipped peer.
fn run_peers(small: bool) -> (Vec<Series>, Vec<String>) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let json = format!("{root}/target/peers.json");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(format!("{root}/benchmarks/peers/peers.py")).args([
        "--install",
        &format!("{root}/target/peers-site"),
        "--json",
        &json,
    ]);
    if small {
        cmd.arg("--small");
    }
    let status = cmd.status();
    let text = match status {
        Ok(s) if s.success() => std::fs::read_to_string(&json).unwrap_or_default(),
        Ok(s) => {
            return (
                vec![],
                vec![format!("peers skipped: peers.py exited with {s}")],
            )
        }
        Err(e) => {
            return (
                vec![],
                vec![format!("peers skipped: python3 did not run: {e}")],
            )
        }
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return (
            vec![],
            vec!["peers skipped: peers.py wrote no results".into()],
        );
    };
    let names = [
        "sum",
        "dot",
        "saxpy",
        "black-scholes",
        "mandelbrot",
        "n-body",
        "k-means",
    ];
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for peer in ["numba", "jax"] {
        let p = &v[peer];
        if let Some(why) = p["skipped"].as_str() {
            skipped.push(format!("{peer} skipped: {why}"));
            continue;
        }
        let mut ms = BTreeMap::new();
        for n in names {
            if let Some(t) = p["ms"][n].as_f64() {
                ms.insert(n, t);
            }
        }
        let version = p["version"].as_str().unwrap_or("?");
        skipped.push(format!("{peer} {version} ran"));
        found.push(Series {
            name: peer.to_string(),
            ms,
        });
    }
    (found, skipped)
}

fn table(reports: &[Report], series: &[Series]) -> String {
    let mut t = String::from("| example | size | sequential reference |");
    for s in series {
        t.push_str(&format!(" {} |", s.name));
    }
    t.push_str("\n|---|---|---:|");
    for _ in series {
        t.push_str("---:|");
    }
    t.push('\n');
    for r in reports {
        t.push_str(&format!(
            "| {} | {} | {:.1} |",
            r.name, r.size, r.reference_ms
        ));
        for s in series {
            match s.ms.get(r.name) {
                Some(ms) => t.push_str(&format!(" {ms:.1} ({:.2}x) |", r.reference_ms / ms)),
                None => t.push_str(" |"),
            }
        }
        t.push('\n');
    }
    t
}

/// Grouped bars: per example, the speedup of each mode and peer over the sequential
/// reference, on a log scale.
#[cfg(feature = "chart")]
fn chart(
    path: &str,
    reports: &[Report],
    series: &[Series],
    cores: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        include_bytes!("assets/DejaVuSans.ttf"),
    )
    .map_err(|_| "the bundled font is invalid")?;
    let shown: Vec<&Series> = series.iter().filter(|s| s.name != "debug").collect();
    let speedups: Vec<f64> = reports
        .iter()
        .flat_map(|r| {
            shown
                .iter()
                .filter_map(move |s| s.ms.get(r.name).map(|ms| r.reference_ms / ms))
        })
        .collect();
    let lo = speedups.iter().cloned().fold(1.0, f64::min).min(1.0) / 2.0;
    let hi = speedups.iter().cloned().fold(1.0, f64::max) * 2.0;
    let root = BitMapBackend::new(path, (1400, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = reports.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Speedup over sequential Rust ({cores} cores; log scale)"),
            ("sans-serif", 26),
        )
        .margin(20)
        .x_label_area_size(90)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo..hi).log_scale())?;
    let names: Vec<&str> = reports.iter().map(|r| r.name).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n + 1)
        .x_label_formatter(&|x| {
            let k = x.round();
            if (x - k).abs() < 1e-6 && k >= 0.0 && (k as usize) < names.len() {
                names[k as usize].to_string()
            } else {
                String::new()
            }
        })
        .x_label_style(("sans-serif", 15))
        .y_desc("speedup (x)")
        .y_label_formatter(&|y| {
            if *y >= 1.0 {
                format!("{y:.0}")
            } else {
                format!("{y:.3}")
            }
        })
        .draw()?;
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    let width = 0.8 / shown.len().max(1) as f64;
    for (k, s) in shown.iter().enumerate() {
        let color = colors[k % colors.len()];
        let bars: Vec<Rectangle<(f64, f64)>> = reports
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let speedup = r.reference_ms / s.ms.get(r.name)?;
                let x0 = i as f64 - 0.4 + k as f64 * width;
                Some(Rectangle::new(
                    [(x0, lo), (x0 + width * 0.9, speedup)],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(bars)?
            .label(s.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
    }
    // The sequential reference: speedup 1.
    chart.draw_series(LineSeries::new(
        [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
        BLACK.stroke_width(1),
    ))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()?;
    root.present()?;
    Ok(())
}
