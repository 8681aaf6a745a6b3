#!/usr/bin/env python3
"""braid vs onnxruntime's CPU provider on whole ONNX models, in the same run.

    bench/cpu_models.py [SKELETON_DIR] [--rounds N] [--duration S] [--warmup N]
                        [--threads N] [--braid PATH] [--baseline PATH] [--workdir DIR] [--only SUBSTR]

With SKELETON_DIR: every *.skel.onnx in it (made by bench/make_skeleton.py) is
filled with random weights by bench/fill_skeleton.py into WORKDIR (kept there
and reused while newer than its skeleton). Without it: the complete tiny
fixtures of tests/models/tiny/*.onnx, so the script runs anywhere.

For each model: inputs are made from the model's graph inputs (seed 0):
integer inputs (token ids) uniform in [0, vocab), vocab being the first dim of
the largest initializer a Gather reads; float inputs (images) standard normal.
Then --rounds rounds, each timing both, alternating who goes first:

  braid: `braid run MODEL --devices cpu --threads T --input ... --warmup W
         --duration S --json --output-dir ...` in a child process (its median
         latency; host wall clock around braid_run; compile not included);
  ORT:   one InferenceSession (intra-op threads T, sequential, all graph
         optimisations), W warm-up runs, then runs for S seconds (median of
         perf_counter around session.run).

The figure per side is the median of the round medians. The outputs of the
last braid run and of ORT are compared (max abs diff, and the largest |ORT
value| for scale). The table (markdown) gives model, braid ms, ORT ms,
braid/ORT, the max abs diff and the 1-minute load average before and after
the model's rounds. Everything is also written to WORKDIR/results.json.
--baseline PATH adds a second braid binary (a build of the base branch, for
a before/after in the same run) to every round, the three in rotated order,
and a second table with each side's round medians and the ratios.

OpenBLAS: see openblas_env (--openblas-core); the header line says which
kernels braid's GEMMs ran.

onnxruntime is installed with `python3 -m pip install onnxruntime` when it is
missing (the script says so; pass --no-install to only print the command).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def ensure_ort(install):
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        cmd = [sys.executable, "-m", "pip", "install", "onnxruntime"]
        if not install:
            sys.exit("cpu_models: onnxruntime is missing; install it with: " + " ".join(cmd))
        print("cpu_models: onnxruntime is missing; running: " + " ".join(cmd), file=sys.stderr)
        if subprocess.call(cmd) != 0:
            sys.exit("cpu_models: pip failed; install onnxruntime by hand (" + " ".join(cmd) + ")")
    import onnxruntime
    return onnxruntime


def numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def model_inputs(path):
    """[(name, numpy dtype, shape)] of the graph inputs, and the vocab for ids."""
    import onnx
    from onnx import helper
    m = onnx.load(path, load_external_data=False)
    inits = {t.name: t for t in m.graph.initializer}
    out = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        tt = i.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                sys.exit(f"cpu_models: {path}: input {i.name} has a symbolic dim "
                         f"({d.dim_param}); export the model with static shapes")
            shape.append(d.dim_value)
        out.append((i.name, helper.tensor_dtype_to_np_dtype(tt.elem_type), tuple(shape)))
    vocab = None
    for n in m.graph.node:
        if n.op_type == "Gather" and n.input[0] in inits:
            t = inits[n.input[0]]
            if len(t.dims) >= 1 and (vocab is None or numel(t) > vocab[1]):
                vocab = (t.dims[0], numel(t))
    return out, (vocab[0] if vocab else None)


def make_inputs(path, outdir):
    specs, vocab = model_inputs(path)
    rng = np.random.default_rng(0)
    feeds, files = {}, {}
    for name, dtype, shape in specs:
        if np.issubdtype(dtype, np.integer):
            if vocab is None:
                sys.exit(f"cpu_models: {path}: integer input {name} but no Gather table to size ids")
            a = rng.integers(0, vocab, size=shape, dtype=np.int64).astype(dtype)
        elif np.issubdtype(dtype, np.floating):
            a = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        elif dtype == np.bool_:
            a = np.ones(shape, dtype=np.bool_)
        else:
            sys.exit(f"cpu_models: {path}: input {name} of dtype {dtype} not handled")
        f = os.path.join(outdir, "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".npy")
        np.save(f, a)
        feeds[name] = a
        files[name] = f
    return feeds, files


def fill(skel, workdir):
    base = os.path.basename(skel)
    name = base[:-len(".skel.onnx")] if base.endswith(".skel.onnx") else os.path.splitext(base)[0]
    out = os.path.join(workdir, name + ".onnx")
    if not (os.path.exists(out) and os.path.getmtime(out) > os.path.getmtime(skel)):
        subprocess.check_call([sys.executable, os.path.join(HERE, "fill_skeleton.py"), skel, out])
    return name, out


OLD_CORES = {"Prescott", "Katmai", "Coppermine", "Northwood", "Core2", "Penryn", "Dunnington",
             "Nehalem", "Atom", "Banias", "Generic"}


def openblas_env(args):
    """The environment braid runs in, and a note on OpenBLAS's kernels.

    OpenBLAS picks its kernels from the CPU model at load time; a release
    older than the CPU (Debian's 0.3.21 on model 207, Emerald Rapids) falls
    back to Prescott (SSE3) kernels. With --openblas-core auto (default) the
    kernels for the CPU's best instruction set are asked for through
    OPENBLAS_CORETYPE when that happens (SkylakeX for AVX-512, Haswell for
    AVX2); 'default' leaves OpenBLAS alone; any other value is passed as is."""
    env = dict(os.environ)
    p = subprocess.run([args.braid, "version"], capture_output=True, text=True,
                       env=dict(env, OPENBLAS_VERBOSE="2"))
    detected = "?"
    for line in (p.stdout + p.stderr).splitlines():
        if line.startswith("Core:"):
            detected = line.split(":", 1)[1].strip()
    if args.openblas_core == "default" or "OPENBLAS_CORETYPE" in os.environ:
        return env, f"OpenBLAS core {detected}" + (" (OPENBLAS_CORETYPE from the environment)"
                                                  if "OPENBLAS_CORETYPE" in os.environ else "")
    want = args.openblas_core
    if want == "auto":
        flags = set()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        flags = set(line.split(":", 1)[1].split())
                        break
        except OSError:
            pass
        if detected not in OLD_CORES:
            return env, f"OpenBLAS core {detected}"
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
            want = "SkylakeX"
        elif "avx2" in flags and "fma" in flags:
            want = "Haswell"
        else:
            return env, f"OpenBLAS core {detected}"
    env["OPENBLAS_CORETYPE"] = want
    return env, f"OpenBLAS core {want} (OPENBLAS_CORETYPE; detected {detected})"


def run_braid(args, model, files, outdir, braid=None):
    cmd = [braid or args.braid, "run", model, "--devices", "cpu", "--threads", str(args.threads),
           "--warmup", str(args.warmup), "--duration", str(args.duration), "--json",
           "--output-dir", outdir]
    for name, f in files.items():
        cmd += ["--input", f"{name}={f}"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=args.env)
    if p.returncode != 0:
        sys.exit(f"cpu_models: braid failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    res = json.loads(p.stdout)
    compile_ms = None
    for line in p.stderr.splitlines():
        if line.startswith("compile:"):
            compile_ms = float(line.split()[1])
    return res["latency_ms"]["median"], res["runs"], compile_ms


def run_ort(sess, feeds, warmup, duration):
    out = None
    for _ in range(warmup):
        out = sess.run(None, feeds)
    times = []
    t_end = time.perf_counter() + duration
    while True:
        t0 = time.perf_counter()
        out = sess.run(None, feeds)
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        if t1 >= t_end:
            break
    return statistics.median(times), len(times), out


def bench_model(args, ort, name, model):
    mdir = os.path.join(args.workdir, name)
    os.makedirs(mdir, exist_ok=True)
    feeds, files = make_inputs(model, mdir)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ort_init_ms = (time.perf_counter() - t0) * 1e3
    load_before = os.getloadavg()[0]
    b_meds, o_meds, b_runs, o_runs, compile_ms, ort_out = [], [], 0, 0, None, None
    base_meds = []
    for r in range(args.rounds):
        order = ["braid", "ort"] + (["base"] if args.baseline else [])
        order = order[r % len(order):] + order[:r % len(order)]
        for who in order:
            if who == "braid":
                med, n, compile_ms = run_braid(args, model, files, mdir)
                b_meds.append(med)
                b_runs += n
            elif who == "base":
                base_dir = os.path.join(mdir, "baseline")
                os.makedirs(base_dir, exist_ok=True)
                base_meds.append(run_braid(args, model, files, base_dir, args.baseline)[0])
            else:
                med, n, ort_out = run_ort(sess, feeds, args.warmup, args.duration)
                o_meds.append(med)
                o_runs += n
        print(f"  {name} round {r + 1}/{args.rounds}: braid {b_meds[-1]:.3f} ms, "
              + (f"baseline {base_meds[-1]:.3f} ms, " if base_meds else "")
              + f"ORT {o_meds[-1]:.3f} ms, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    load_after = os.getloadavg()[0]
    diffs, scale = [], 0.0
    for meta, o in zip(sess.get_outputs(), ort_out):
        f = os.path.join(mdir, "".join(c if c.isalnum() or c in "._-" else "_" for c in meta.name) + ".npy")
        b = np.load(f)
        if b.shape != o.shape:
            sys.exit(f"cpu_models: {name}: output {meta.name}: braid {b.shape} vs ORT {o.shape}")
        diffs.append(float(np.max(np.abs(b.astype(np.float64) - o.astype(np.float64)))) if o.size else 0.0)
        scale = max(scale, float(np.max(np.abs(o))) if o.size else 0.0)
    b_med, o_med = statistics.median(b_meds), statistics.median(o_meds)
    return {
        "model": name, "file": model, "threads": args.threads,
        "braid_ms": b_med, "ort_ms": o_med, "ratio": b_med / o_med,
        "braid_round_ms": b_meds, "ort_round_ms": o_meds,
        "braid_runs": b_runs, "ort_runs": o_runs,
        "braid_compile_ms": compile_ms, "ort_session_ms": ort_init_ms,
        "max_abs_diff": max(diffs) if diffs else 0.0, "max_abs_ort": scale,
        "load_before": load_before, "load_after": load_after,
        "baseline_ms": statistics.median(base_meds) if base_meds else None,
        "baseline_round_ms": base_meds,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("skeleton_dir", nargs="?", help="directory of *.skel.onnx (default: the tiny fixtures)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=2.0, help="timed seconds per side per round")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--braid", default=os.path.join(ROOT, "build", "braid"))
    ap.add_argument("--baseline", help="a second braid binary (e.g. a build of the base branch), "
                    "run in the same rounds (order rotated) and reported beside")
    ap.add_argument("--workdir", default=os.path.join("/tmp", "braid_cpu_models"))
    ap.add_argument("--only", action="append", default=[], help="run only models whose name contains this")
    ap.add_argument("--openblas-core", default="auto",
                    help="auto (default: fix a misdetected OpenBLAS core), default, or an OPENBLAS_CORETYPE value")
    ap.add_argument("--no-install", action="store_true", help="do not pip install onnxruntime when missing")
    args = ap.parse_args(argv)
    if not os.access(args.braid, os.X_OK):
        sys.exit(f"cpu_models: {args.braid} not found; build it: cmake --build build --target braid")
    ort = ensure_ort(not args.no_install)
    os.makedirs(args.workdir, exist_ok=True)

    if args.skeleton_dir:
        skels = sorted(glob.glob(os.path.join(args.skeleton_dir, "*.skel.onnx")))
        if not skels:
            sys.exit(f"cpu_models: no *.skel.onnx in {args.skeleton_dir}")
        models = [fill(s, args.workdir) for s in skels
                  if not args.only or any(o in os.path.basename(s) for o in args.only)]
    else:
        models = [(os.path.basename(p)[:-5], p)
                  for p in sorted(glob.glob(os.path.join(ROOT, "tests", "models", "tiny", "*.onnx")))
                  if not args.only or any(o in os.path.basename(p) for o in args.only)]

    ver = subprocess.run([args.braid, "version"], capture_output=True, text=True).stdout.splitlines()
    args.env, blas_note = openblas_env(args)
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; cores: {os.cpu_count()}; "
          f"threads: {args.threads}; {ver[0] if ver else 'braid ?'}; {blas_note}; onnxruntime {ort.__version__}; "
          f"rounds {args.rounds} x {args.duration} s per side, warm-up {args.warmup}")
    results = []
    for name, path in models:
        results.append(bench_model(args, ort, name, path))
    print()
    print("| model | braid ms | ORT ms | braid/ORT | max abs diff (max abs out) | braid compile ms | ORT session ms | load avg (1 min) before / after |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['model']} | {r['braid_ms']:.3f} | {r['ort_ms']:.3f} | {r['ratio']:.2f}x | "
              f"{r['max_abs_diff']:.2e} ({r['max_abs_ort']:.3g}) | "
              f"{r['braid_compile_ms'] if r['braid_compile_ms'] is not None else float('nan'):.1f} | "
              f"{r['ort_session_ms']:.0f} | {r['load_before']:.2f} / {r['load_after']:.2f} |")
    if args.baseline:
        print()
        print(f"baseline {args.baseline}, same rounds:")
        print("| model | braid ms (rounds) | baseline ms (rounds) | ORT ms (rounds) | braid/ORT | baseline/ORT | braid/baseline |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            rounds = lambda v: " ".join(f"{x:.0f}" for x in v)
            print(f"| {r['model']} | {r['braid_ms']:.1f} ({rounds(r['braid_round_ms'])}) | "
                  f"{r['baseline_ms']:.1f} ({rounds(r['baseline_round_ms'])}) | "
                  f"{r['ort_ms']:.1f} ({rounds(r['ort_round_ms'])}) | {r['ratio']:.2f}x | "
                  f"{r['baseline_ms'] / r['ort_ms']:.2f}x | {r['braid_ms'] / r['baseline_ms']:.2f}x |")
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump({"onnxruntime": ort.__version__, "braid": ver, "openblas": blas_note, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
