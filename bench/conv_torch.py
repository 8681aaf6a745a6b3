# bench/conv_torch.py — PyTorch's cuDNN convolution (torch.nn.functional.
# conv2d, f32, TF32 off) on every convolution shape of ResNet-18 at batch 8,
# for bench/conv_table.py to set beside bench/gpu_conv.c's figures.
# The shapes are read from bench/conv_shapes.h (one list for both sides).
# Each shape is timed twice: cudnn.benchmark off (PyTorch's default: the
# heuristic's algorithm) and on (the fastest algorithm by timed trials,
# what braid's cudnnFind choice corresponds to). Timing: CUDA events
# around one call, median of 20 after 3 (as braid's profiler times its
# node). And as a CUDA-graph replay (graph_ms, cudnn.benchmark on): 5
# back-to-back calls captured in one torch.cuda.CUDAGraph, events around
# each replay, median of 20 after 3, divided by 5 — how braid's executor
# times the candidates it chooses among, whose figure bench/gpu_conv reads
# (a plan's run is a graph replay: host-side work per call is not paid).
# Writes conv_torch.json into $ANCHORS_DIR (else .).
# Usage: python3 bench/conv_torch.py
import json, os, re, statistics, sys
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
BATCH = 8

def shapes():
    here = os.path.dirname(os.path.abspath(__file__))
    text = open(os.path.join(here, "conv_shapes.h")).read()
    rows = re.findall(r'\{"(\w+)",\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+),'
                      r'\s*(\d+),\s*(\d+)\}', text)
    return [(r[0],) + tuple(int(v) for v in r[1:]) for r in rows]

def event_ms(fn, warm=3, reps=20):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)

def graph_ms(fn, calls=5, warm=3, reps=20):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture, as required
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return event_ms(g.replay, warm, reps) / calls


def main():
    dev = torch.device("cuda:0")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "shapes": {}}
    print("device:", out["device"], "torch", out["torch"], "cudnn", out["cudnn"])
    for name, C, OC, HW, k, stride, pad, count in shapes():
        x = torch.randn(BATCH, C, HW, HW, device=dev)
        w = torch.randn(OC, C, k, k, device=dev) * 0.1
        row = {"count": count}
        for bench in (False, True):
            torch.backends.cudnn.benchmark = bench
            ms = event_ms(lambda: F.conv2d(x, w, stride=stride, padding=pad))
            row["benchmark_ms" if bench else "default_ms"] = ms
        torch.backends.cudnn.benchmark = True
        row["graph_ms"] = graph_ms(lambda: F.conv2d(x, w, stride=stride,
                                                    padding=pad))
        out["shapes"][name] = row
        print(f"{name:24s} default {row['default_ms']:.4f} ms  benchmark "
              f"{row['benchmark_ms']:.4f} ms  graph {row['graph_ms']:.4f} ms",
              flush=True)
    path = os.path.join(os.environ.get("ANCHORS_DIR", "."), "conv_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)

if __name__ == "__main__":
    sys.exit(main())
