# bench/conv_table.py — the convolution table: bench/gpu_conv's figures
# (its log: "CONV name=… count=… cudnn_ms=… kernel_ms=…") beside PyTorch's
# (conv_torch.json from bench/conv_torch.py), per ResNet-18 shape at batch
# 8 and for the whole set of 20 convolutions (each shape times its count).
# Speed ratio = PyTorch ms / braid ms (above 1: braid faster), against
# PyTorch's default (cudnn.benchmark off) and its benchmark mode.
# Target (issue 13): each shape >= 0.95 and the set >= 1.0. Then the same
# as CUDA-graph replays (graph_ms on both sides: how a plan runs; host-side
# work per call not counted), when both sides have the figure.
# Usage: python3 bench/conv_table.py gpu_conv.log conv_torch.json
import json, re, sys

def main(log_path, torch_path):
    rows = {}
    for line in open(log_path):
        if line.startswith("CONV "):
            kv = dict(p.split("=", 1) for p in line.split()[1:])
            rows[kv["name"]] = kv
    tj = json.load(open(torch_path))
    ts = tj["shapes"]
    print(f"GPU {tj['device']}, torch {tj['torch']}, torch's cuDNN {tj['cudnn']}")
    print("| shape | n | braid ms (default: cuDNN or own kernel) | braid kernel ms | torch ms | torch bench ms "
          "| ratio | ratio (bench) | kernel/cuDNN |")
    print("|---|---|---|---|---|---|---|---|---|")
    tot = {"b": 0.0, "k": 0.0, "t": 0.0, "tb": 0.0}
    worst = 9e9
    for name, r in rows.items():
        if name not in ts:
            continue
        n = int(r["count"]); b = float(r["cudnn_ms"]); k = float(r["kernel_ms"])
        t = ts[name]["default_ms"]; tb = ts[name]["benchmark_ms"]
        tot["b"] += n * b; tot["k"] += n * k; tot["t"] += n * t; tot["tb"] += n * tb
        worst = min(worst, t / b)
        print(f"| {name} | {n} | {b:.4f} | {k:.4f} | {t:.4f} | {tb:.4f} | "
              f"{t / b:.3f} | {tb / b:.3f} | {k / b:.2f} |")
    if tot["b"] > 0:
        print(f"| set (20 convs) | 20 | {tot['b']:.4f} | {tot['k']:.4f} | "
              f"{tot['t']:.4f} | {tot['tb']:.4f} | {tot['t'] / tot['b']:.3f} | "
              f"{tot['tb'] / tot['b']:.3f} | {tot['k'] / tot['b']:.2f} |")
        ok = worst >= 0.95 and tot["t"] / tot["b"] >= 1.0
        print(f"target (each shape >= 0.95x torch default, set >= 1.0x): "
              f"{'met' if ok else 'NOT met'} (worst shape {worst:.3f})")

    graph_table(rows, ts)


def graph_table(rows, ts):
    have = [n for n, r in rows.items() if n in ts and "graph_ms" in ts[n]
            and r.get("graph_ms", "nan") != "nan"]
    if not have:
        return
    print()
    print("As CUDA-graph replays (5 calls per replay, median; braid: the "
          "executor's timing of its choice):")
    print("| shape | n | braid graph ms | torch graph ms | ratio |")
    print("|---|---|---|---|---|")
    tb = tt = 0.0
    worst = 9e9
    for name in have:
        n = int(rows[name]["count"])
        b = float(rows[name]["graph_ms"]); t = ts[name]["graph_ms"]
        tb += n * b; tt += n * t
        worst = min(worst, t / b)
        print(f"| {name} | {n} | {b:.4f} | {t:.4f} | {t / b:.3f} |")
    print(f"| set ({len(have)} of {len(rows)} shapes) | "
          f"{sum(int(rows[n]['count']) for n in have)} | {tb:.4f} | "
          f"{tt:.4f} | {tt / tb:.3f} |")
    ok = worst >= 0.95 and tt / tb >= 1.0 and len(have) == len(rows)
    print(f"target as graph replays (each shape >= 0.95x, set >= 1.0x): "
          f"{'met' if ok else 'NOT met'} (worst shape {worst:.3f})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
