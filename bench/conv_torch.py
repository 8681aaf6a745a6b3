# bench/conv_torch.py — PyTorch's cuDNN convolution (torch.nn.functional.
# conv2d, f32, TF32 off) on every convolution shape of ResNet-18 at batch 8,
# for bench/conv_table.py to set beside bench/gpu_conv.c's figures.
# The shapes are read from bench/conv_shapes.h (one list for both sides).
# Each shape is timed twice: cudnn.benchmark off (PyTorch's default: the
# heuristic's algorithm) and on (the fastest algorithm by timed trials,
# what braid's cudnnFind choice corresponds to). Timing: CUDA events
# around one call, median of 20 after 3 (as braid's profiler times its
# node). Writes conv_torch.json into $ANCHORS_DIR (else .).
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
        out["shapes"][name] = row
        print(f"{name:24s} default {row['default_ms']:.4f} ms  benchmark "
              f"{row['benchmark_ms']:.4f} ms", flush=True)
    path = os.path.join(os.environ.get("ANCHORS_DIR", "."), "conv_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)

if __name__ == "__main__":
    sys.exit(main())
