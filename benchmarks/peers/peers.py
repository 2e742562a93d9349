#!/usr/bin/env python3
"""The classic benchmarks in the peers a Python user would pick: Numba (@njit(parallel=True))
and JAX (jit, on the CPU), on the same data and sizes as accel's `suite`
(examples/src/classic.rs). Each peer is timed after a warm-up call (its compilation
excluded), median of 5 runs; results go to a JSON file the suite reads.

    python3 benchmarks/peers/peers.py [--small] [--install DIR] --json OUT

--install DIR installs numba and jax[cpu] from PyPI into DIR (pip --target) when they are
not importable; a peer that is still missing is reported as skipped, with the reason.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time


def sizes(small):
    return {
        "sum": 10_000 if small else 1 << 25,
        "dot": 10_000 if small else 1 << 25,
        "saxpy": 10_000 if small else 1 << 25,
        "black-scholes": 10_000 if small else 1 << 23,
        "mandelbrot": 128 if small else 2048,
        "n-body": 512 if small else 16_384,
        "k-means": (2_000, 4) if small else (1 << 20, 8),
    }


def bits(np, n, seed):
    """The random bits of elements 0..n of stream `seed`: SplitMix64's finaliser of
    seed * 2^32 + i, exactly as examples/src/random.rs computes them."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) << np.uint64(32)) + np.arange(n, dtype=np.uint64) \
            + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform(np, n, seed, lo, hi):
    unit = (bits(np, n, seed) >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / (1 << 24))
    return np.float32(lo) + np.float32(hi - lo) * unit


def below(np, n, seed, k):
    unit = (bits(np, n, seed) >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / (1 << 24))
    return np.minimum((unit * np.float32(k)).astype(np.int64), k - 1)


def inputs(np, small):
    """The suite's inputs: random from the same seeds as examples/src/classic.rs."""
    s = sizes(small)
    out = {}
    out["sum"] = (uniform(np, s["sum"], 1, 0, 1),)
    n = s["dot"]
    out["dot"] = (uniform(np, n, 1, -1, 1), uniform(np, n, 2, -1, 1))
    out["saxpy"] = (np.float32(2.5), uniform(np, n, 3, -1, 1), uniform(np, n, 4, -1, 1))
    n = s["black-scholes"]
    out["black-scholes"] = (uniform(np, n, 5, 5, 30), uniform(np, n, 6, 1, 100),
                            uniform(np, n, 7, 0.25, 5))
    out["mandelbrot"] = (s["mandelbrot"],)
    n = s["n-body"]
    out["n-body"] = (uniform(np, n, 8, -100, 100), uniform(np, n, 9, -100, 100),
                     uniform(np, n, 10, 1, 8))
    n, k = s["k-means"]
    c = below(np, n, 11, k).astype(np.float32)
    out["k-means"] = (c * np.float32(10) + uniform(np, n, 12, 0, 5),
                      c * np.float32(-5) + uniform(np, n, 13, 0, 5), k)
    return out


def self_test(np):
    """The values examples/src/random.rs's tests pin."""
    assert int(bits(np, 1, 0)[0]) == 0xE220A8397B1DCDAF
    x = uniform(np, 3, 1, -1, 1)
    assert x.dtype == np.float32 and (x >= -1).all() and (x < 1).all()


def median_ms(f, runs=5):
    f()  # warm-up: compilation
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2]


def numba_suite(np, small):
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def sum_(x):
        s = 0.0
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    @njit(parallel=True)
    def dot(x, y):
        s = 0.0
        for i in prange(x.shape[0]):
            s += x[i] * y[i]
        return s

    @njit(parallel=True)
    def saxpy(a, x, y):
        out = np.empty_like(x)
        for i in prange(x.shape[0]):
            out[i] = a * x[i] + y[i]
        return out

    @njit
    def cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * abs(d))
        poly = k * (0.31938153 + k * (-0.35656378 + k * (1.7814779 + k * (-1.821256 + k * 1.3302745))))
        w = 1.0 - 0.3989423 * math.exp(-0.5 * d * d) * poly
        return 1.0 - w if d < 0.0 else w

    @njit(parallel=True)
    def black_scholes(price, strike, years):
        r = np.float32(0.02)
        v = np.float32(0.30)
        call = np.empty_like(price)
        put = np.empty_like(price)
        for i in prange(price.shape[0]):
            sqrt_t = math.sqrt(years[i])
            d1 = (math.log(price[i] / strike[i]) + (r + 0.5 * v * v) * years[i]) / (v * sqrt_t)
            d2 = d1 - v * sqrt_t
            discounted = strike[i] * math.exp(-r * years[i])
            call[i] = price[i] * cnd(d1) - discounted * cnd(d2)
            put[i] = discounted * (1.0 - cnd(d2)) - price[i] * (1.0 - cnd(d1))
        return call, put

    @njit(parallel=True)
    def mandelbrot(side):
        out = np.empty(side * side, dtype=np.uint32)
        for k in prange(side * side):
            cx = (k % side) / side * 3.0 - 2.0
            cy = (k // side) / side * 2.0 - 1.0
            x = 0.0
            y = 0.0
            i = 0
            while i < 256 and x * x + y * y <= 4.0:
                t = x * x - y * y + cx
                y = 2.0 * x * y + cy
                x = t
                i += 1
            out[k] = i
        return out

    @njit(parallel=True)
    def nbody(px, py, pm):
        n = px.shape[0]
        out = np.empty_like(px)
        for i in prange(n):
            ax = np.float32(0.0)
            for j in range(n):
                dx = px[j] - px[i]
                dy = py[j] - py[i]
                d2 = dx * dx + dy * dy + np.float32(0.01)
                ax += pm[j] * dx / (d2 * np.sqrt(d2))
            out[i] = ax
        return out

    @njit(parallel=True)
    def assign(xs, ys, cx, cy):
        out = np.empty(xs.shape[0], dtype=np.int64)
        for i in prange(xs.shape[0]):
            best = 0
            best_d = np.inf
            for c in range(cx.shape[0]):
                d = (xs[i] - cx[c]) ** 2 + (ys[i] - cy[c]) ** 2
                if d < best_d:
                    best_d = d
                    best = c
            out[i] = best
        return out

    def kmeans(xs, ys, k):
        cx, cy = xs[:k].copy(), ys[:k].copy()
        for _ in range(10):
            a = assign(xs, ys, cx, cy)
            count = np.bincount(a, minlength=k)
            sx = np.bincount(a, weights=xs, minlength=k)
            sy = np.bincount(a, weights=ys, minlength=k)
            nz = count > 0
            cx[nz] = (sx[nz] / count[nz]).astype(np.float32)
            cy[nz] = (sy[nz] / count[nz]).astype(np.float32)
        return cx, cy

    fns = {"sum": sum_, "dot": dot, "saxpy": saxpy, "black-scholes": black_scholes,
           "mandelbrot": mandelbrot, "n-body": nbody, "k-means": kmeans}
    args = inputs(np, small)
    return {"version": numba.__version__, "threads": numba.get_num_threads(),
            "ms": {name: median_ms(lambda f=f, a=args[name]: f(*a)) for name, f in fns.items()}}


def jax_suite(np, small):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")

    @jax.jit
    def sum_(x):
        return jnp.sum(x)

    @jax.jit
    def dot(x, y):
        return jnp.dot(x, y)

    @jax.jit
    def saxpy(a, x, y):
        return a * x + y

    def cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * jnp.abs(d))
        poly = k * (0.31938153 + k * (-0.35656378 + k * (1.7814779 + k * (-1.821256 + k * 1.3302745))))
        w = 1.0 - 0.3989423 * jnp.exp(-0.5 * d * d) * poly
        return jnp.where(d < 0.0, 1.0 - w, w)

    @jax.jit
    def black_scholes(price, strike, years):
        r, v = jnp.float32(0.02), jnp.float32(0.30)
        sqrt_t = jnp.sqrt(years)
        d1 = (jnp.log(price / strike) + (r + 0.5 * v * v) * years) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        discounted = strike * jnp.exp(-r * years)
        return (price * cnd(d1) - discounted * cnd(d2),
                discounted * (1.0 - cnd(d2)) - price * (1.0 - cnd(d1)))

    def mandelbrot(side):
        return _mandel(side)

    from functools import partial

    @partial(jax.jit, static_argnums=0)
    def _mandel(side):
        k = jnp.arange(side * side)
        cx = (k % side) / side * 3.0 - 2.0
        cy = (k // side) / side * 2.0 - 1.0

        def body(_, state):
            x, y, i = state
            inside = x * x + y * y <= 4.0
            t = x * x - y * y + cx
            y2 = 2.0 * x * y + cy
            return (jnp.where(inside, t, x), jnp.where(inside, y2, y), i + inside)

        zero = jnp.zeros(side * side, dtype=jnp.float32)
        _, _, i = jax.lax.fori_loop(0, 256, body, (zero, zero, jnp.zeros(side * side, jnp.uint32)))
        return i

    @jax.jit
    def nbody(px, py, pm):
        def block(pxi_pyi):
            pxi, pyi = pxi_pyi
            dx = px[None, :] - pxi[:, None]
            dy = py[None, :] - pyi[:, None]
            d2 = dx * dx + dy * dy + 0.01
            return jnp.sum(pm[None, :] * dx / (d2 * jnp.sqrt(d2)), axis=1)
        b = 256
        n = px.shape[0]
        return jax.lax.map(block, (px.reshape(n // b, b), py.reshape(n // b, b))).reshape(n)

    def kmeans(xs, ys, k):
        return _kmeans(xs, ys, k)

    @partial(jax.jit, static_argnums=2)
    def _kmeans(xs, ys, k):
        def round_(_, c):
            cx, cy = c
            d = (xs[:, None] - cx[None, :]) ** 2 + (ys[:, None] - cy[None, :]) ** 2
            a = jnp.argmin(d, axis=1)
            count = jax.ops.segment_sum(jnp.ones_like(xs), a, k)
            sx = jax.ops.segment_sum(xs, a, k)
            sy = jax.ops.segment_sum(ys, a, k)
            safe = jnp.maximum(count, 1.0)
            return (jnp.where(count > 0, sx / safe, cx), jnp.where(count > 0, sy / safe, cy))
        return jax.lax.fori_loop(0, 10, round_, (xs[:k], ys[:k]))

    fns = {"sum": sum_, "dot": dot, "saxpy": saxpy, "black-scholes": black_scholes,
           "mandelbrot": mandelbrot, "n-body": nbody, "k-means": kmeans}
    args = inputs(np, small)

    def run(f, a):
        r = f(*a)
        jax.block_until_ready(r)

    return {"version": jax.__version__,
            "ms": {name: median_ms(lambda f=f, a=args[name]: run(f, a)) for name, f in fns.items()}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--small", action="store_true")
    p.add_argument("--install", metavar="DIR")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    if a.install:
        os.makedirs(a.install, exist_ok=True)
        sys.path.insert(0, a.install)
    results = {}
    for peer, module, package, suite in [("numba", "numba", "numba", numba_suite),
                                         ("jax", "jax", "jax[cpu]", jax_suite)]:
        try:
            __import__(module)
        except ImportError:
            if a.install:
                subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                                "--disable-pip-version-check", "--target", a.install, package],
                               check=False)
        try:
            import numpy as np
            self_test(np)
            results[peer] = suite(np, a.small)
        except Exception as e:  # a missing or broken peer is reported, not fatal
            results[peer] = {"skipped": f"{type(e).__name__}: {e}"}
        print(f"{peer}: {json.dumps(results[peer])}", file=sys.stderr)
    with open(a.json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
