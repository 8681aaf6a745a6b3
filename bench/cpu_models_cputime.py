#!/usr/bin/env python3
"""CPU time per inference of braid and onnxruntime on whole ONNX models: a
figure a loaded machine disturbs far less than wall time.

    bench/cpu_models_cputime.py MODEL.onnx [MODEL.onnx ...] [--threads 1,2]
                                [--runs N] [--braid PATH] [--baseline PATH]

braid: `braid run MODEL --devices cpu --threads T --repeat R --input ...`
in a child process, for R = 1 and R = 1 + N; its user + system CPU time
(getrusage of the child) for the second minus the first, divided by N, is
the CPU time per run (compile and the first run cancel out). With
--baseline, a second braid binary the same way. ORT: one InferenceSession
(intra-op threads T, sequential), 2 warm-up runs, then N runs timed by
time.process_time() of this process. Sides alternate per thread count.
With T > 1 the figure includes time threads spend waiting busily (BLAS or
OpenMP spinning), which is the point: it is CPU the other threads lose.
Inputs are made as bench/cpu_models.py makes them (seed 0)."""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_models  # noqa: E402  (make_inputs)


def child_cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"cpu_models_cputime: failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def braid_cpu_ms(braid, model, files, threads, runs):
    cmd = [braid, "run", model, "--devices", "cpu", "--threads", str(threads)]
    for name, f in files.items():
        cmd += ["--input", f"{name}={f}"]
    one = child_cpu(cmd + ["--repeat", "1"])
    many = child_cpu(cmd + ["--repeat", str(1 + runs)])
    return (many - one) / runs * 1e3


def ort_cpu_ms(ort, model, feeds, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(2):
        sess.run(None, feeds)
    c0 = time.process_time()
    for _ in range(runs):
        sess.run(None, feeds)
    return (time.process_time() - c0) / runs * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--braid", default=os.path.join(HERE, "..", "build", "braid"))
    ap.add_argument("--baseline")
    args = ap.parse_args()
    import onnxruntime as ort
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f}, "
          f"onnxruntime {ort.__version__}, {args.runs} runs per figure")
    print("| model | threads | braid CPU ms/run | " + ("baseline CPU ms/run | " if args.baseline else "")
          + "ORT CPU ms/run | braid/ORT | " + ("baseline/ORT | " if args.baseline else "") + "load |")
    print("|---|---|---|---|---|---|" + ("---|---|" if args.baseline else ""))
    for model in args.models:
        with tempfile.TemporaryDirectory() as d:
            feeds, files = cpu_models.make_inputs(model, d)
            for t in map(int, args.threads.split(",")):
                b = braid_cpu_ms(args.braid, model, files, t, args.runs)
                base = braid_cpu_ms(args.baseline, model, files, t, args.runs) if args.baseline else None
                o = ort_cpu_ms(ort, model, feeds, t, args.runs)
                name = os.path.basename(model)
                row = f"| {name} | {t} | {b:.1f} | " + (f"{base:.1f} | " if base else "") + f"{o:.1f} | {b / o:.2f} | "
                row += (f"{base / o:.2f} | " if base else "") + f"{os.getloadavg()[0]:.1f} |"
                print(row, flush=True)


if __name__ == "__main__":
    main()
