#!/usr/bin/env python3
"""bench/gemm_libs/ort_gemm.py: onnxruntime's CPU provider on the shapes of
gemm_libs.c, one single-node ONNX model per shape (constant operands as
initializers, so ORT may pre-pack them), 1 and 2 intra-op threads.
Prints lines in gemm_libs.c's format. usage: ort_gemm.py [--time S] [--only SUBSTR]"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

# name, batch, M, N, K, how: "w" = B constant [K,N], "wt" = B constant
# [N,K] (Gemm transB), "bt" = both inputs, B [N,K]; "b" = both inputs;
# "conv" = A constant [M,K], B input [batch,K,N]
SHAPES = [
    ("gpt2_qkv_128x768x2304", 1, 128, 2304, 768, "w"),
    ("gpt2_proj_128x768x768", 1, 128, 768, 768, "w"),
    ("gpt2_fc_128x768x3072", 1, 128, 3072, 768, "w"),
    ("gpt2_fcproj_128x3072x768", 1, 128, 768, 3072, "w"),
    ("gpt2_lmhead_128x768x50257_Bt", 1, 128, 50257, 768, "wt"),
    ("gpt2_qk_12x128x64x128_Bt", 12, 128, 128, 64, "bt"),
    ("gpt2_av_12x128x128x64", 12, 128, 64, 128, "b"),
]


def conv_shapes():
    src = open(os.path.join(os.path.dirname(__file__), "..", "conv_shapes.h")).read()
    import re
    for m in re.finditer(r'\{"(\w+)", (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\}', src):
        name, C, OC, HW, k, s, p, cnt = m.group(1), *map(int, m.groups()[1:])
        ho = (HW + 2 * p - k) // s + 1
        yield (f"rn18_{name}_x{cnt}", 8, OC, ho * ho, C * k * k, "conv")


def model(batch, M, N, K, how, rng):
    f = TensorProto.FLOAT
    inits, inputs, feeds = [], [], {}
    if how in ("w", "wt"):
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N) if how == "w" else (N, K), dtype=np.float32)
        inputs.append(helper.make_tensor_value_info("A", f, [M, K]))
        inits.append(numpy_helper.from_array(b, "B"))
        feeds["A"] = a
        node = (helper.make_node("MatMul", ["A", "B"], ["C"]) if how == "w" else
                helper.make_node("Gemm", ["A", "B"], ["C"], transB=1))
        out = [M, N]
    elif how in ("b", "bt"):
        a = rng.standard_normal((batch, M, K), dtype=np.float32)
        b = rng.standard_normal((batch, K, N), dtype=np.float32)
        inputs += [helper.make_tensor_value_info("A", f, [batch, M, K]),
                   helper.make_tensor_value_info("B", f, [batch, K, N])]
        feeds.update(A=a, B=b)
        node = helper.make_node("MatMul", ["A", "B"], ["C"])
        out = [batch, M, N]
    else:
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((batch, K, N), dtype=np.float32)
        inits.append(numpy_helper.from_array(a, "A"))
        inputs.append(helper.make_tensor_value_info("B", f, [batch, K, N]))
        feeds["B"] = b
        node = helper.make_node("MatMul", ["A", "B"], ["C"])
        out = [batch, M, N]
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("C", f, out)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m.SerializeToString(), feeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=float, default=0.4)
    ap.add_argument("--only")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--libs")  # gemm_libs.c's; ignored here
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"# onnxruntime {ort.__version__}")
    for name, batch, M, N, K, how in SHAPES + list(conv_shapes()):
        if a.only and a.only not in name:
            continue
        blob, feeds = model(batch, M, N, K, how, rng)
        gflop = 2.0 * batch * M * N * K / 1e9
        for t in map(int, a.threads.split(",")):
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            s = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
            s.run(None, feeds)
            ts, cs, end = [], [], time.perf_counter() + a.time
            while len(ts) < 1000 and (len(ts) < 3 or time.perf_counter() < end):
                t0, c0 = time.perf_counter(), time.process_time()
                s.run(None, feeds)
                cs.append((time.process_time() - c0) * 1e3)
                ts.append((time.perf_counter() - t0) * 1e3)
            ts.sort()
            cs.sort()
            med = ts[len(ts) // 2]
            print(f"{name:<34} {'ort':<18} t={t}  {med:9.3f} ms  (min {ts[0]:9.3f})  "
                  f"{gflop / (ts[0] / 1e3):6.1f} GFLOP/s  n={len(ts):3d}  cpu {cs[len(cs) // 2]:9.3f} ms", flush=True)


if __name__ == "__main__":
    main()
