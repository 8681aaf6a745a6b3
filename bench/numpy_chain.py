#!/usr/bin/python3
"""bench/numpy_chain.py — the elementwise chain of ANCHORS.md in NumPy, op by op.

    out = tanh(x * y + z) * sigmoid(x) + y * 0.5 - exp(-z)

on 2^24 float32 elements (the same as bench/elementwise_chain.c): one NumPy
call per op, each a full pass over memory, as NumPy users write it. NumPy has
no sigmoid, so sigmoid(x) is written 1 / (1 + exp(-x)) (four calls).
Prints the median of --runs runs after 3 warm-up runs, then one key=value
line for bench/run_cpu.sh.
"""
import argparse
import time

import numpy as np


def chain(x, y, z):
    xy = x * y
    xyz = xy + z
    t = np.tanh(xyz)
    s = np.float32(1) / (np.float32(1) + np.exp(-x))
    ts = t * s
    yh = y * np.float32(0.5)
    acc = ts + yh
    nz = -z
    ez = np.exp(nz)
    return acc - ez


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    x, y, z = (rng.uniform(-1, 1, a.n).astype(np.float32) for _ in range(3))
    for _ in range(3):
        out = chain(x, y, z)
    assert out.dtype == np.float32
    times = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        chain(x, y, z)
        times.append(time.perf_counter() - t0)
    med = sorted(times)[len(times) // 2]
    print(f"numpy {np.__version__}: {med * 1e3:.2f} ms median of {a.runs} runs "
          f"({16 * a.n / med / 1e9:.1f} GB/s of compulsory traffic)")
    print(f"numpy_ms={med * 1e3:.3f} numpy_version={np.__version__}")


if __name__ == "__main__":
    main()
