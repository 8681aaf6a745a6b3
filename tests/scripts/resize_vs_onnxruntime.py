"""Cross-check of braid's resize against onnxruntime.

Random cases over the last 1 to 3 axes of a rank 3 to 5 input (N and C
kept): nearest (every nearest_mode) and linear, every coordinate
transformation PyTorch exports (half_pixel, pytorch_half_pixel,
align_corners, asymmetric), sizes or scales given (up- and downsampling,
non-integer scales). Cases where a scale leaves an axis's size unchanged
(2 x 1.25 -> 2) are skipped: onnxruntime copies such an axis, where ONNX's
formula (and PyTorch) apply the scale, as braid does. Each case is one ONNX Resize node (opset 19) run by
onnxruntime and the same resize written as a .graph file run by `braid
run`; outputs must agree within 1e-5 (onnxruntime computes in float,
braid in double).

Usage: python3 tests/scripts/resize_vs_onnxruntime.py [SEED] (BRAID = the
CLI, default build/braid); prints mismatches and "bad N".
"""
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

B = os.environ.get("BRAID", "build/braid")
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
D = tempfile.mkdtemp()
COORDS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
L = lambda v: "[" + ",".join(map(str, v)) + "]"
bad = 0
for it in range(60):
    rank = rng.randint(3, 5)
    k = rng.randint(1, min(3, rank - 2))
    dims = [rng.randint(1, 3), rng.randint(1, 3)] + [rng.randint(1, 7) for _ in range(rank - 2)]
    mode = rng.choice(["nearest", "linear"])
    coord = rng.choice(COORDS)
    near = rng.choice(NEAREST)
    use_scales = rng.random() < 0.5
    scales = [1.0] * rank
    sizes = list(dims)
    for a in range(rank - k, rank):
        if use_scales:
            scales[a] = rng.choice([0.5, 0.75, 1.5, 2.0, 3.0, 1.25, 0.6])
            sizes[a] = int(np.floor(dims[a] * scales[a]))
        else:
            sizes[a] = rng.randint(1, 12)
    if min(sizes) < 1:
        continue
    # onnxruntime copies an axis whose size the scale leaves unchanged
    # (2 x 1.25 -> 2) where ONNX's formula and PyTorch use the scale: skip
    if use_scales and any(sizes[a] == dims[a] and scales[a] != 1 for a in range(rank)):
        continue
    x = np.random.default_rng(it).uniform(-4, 4, dims).astype(np.float32)
    np.save(os.path.join(D, "x.npy"), x)
    inputs = ["x", "", "scales" if use_scales else "", "" if use_scales else "sizes"]
    inits = [helper.make_tensor("scales", TensorProto.FLOAT, [rank], scales)] if use_scales else [
        helper.make_tensor("sizes", TensorProto.INT64, [rank], sizes)]
    while inputs and inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("Resize", inputs, ["y"], mode=mode,
                            coordinate_transformation_mode=coord, nearest_mode=near)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    try:
        ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    except Exception as e:
        print("ort refused", str(e)[:100])
        continue
    # braid's scales: the ONNX scales, or out/in for sizes (as ONNX does)
    sc = scales if use_scales else [sizes[a] / dims[a] for a in range(rank)]
    txt = ("braid-graph 1\n%0 = input f32" + L(dims) + ' name="x"\n'
           "%1 = resize %0 shape=" + L(sizes) + " scales=[" + ",".join(repr(float(s)) for s in sc) + "]"
           " mode=" + mode + " coordinate_transformation_mode=" + coord + " nearest_mode=" + near +
           '\noutput "y" = %1\n')
    with open(os.path.join(D, "t.graph"), "w") as f:
        f.write(txt)
    r = subprocess.run([B, "run", os.path.join(D, "t.graph"), "--input", "x=" + os.path.join(D, "x.npy"),
                        "--output-dir", os.path.join(D, "o")], capture_output=True, text=True)
    if r.returncode:
        bad += 1
        print("braid failed", r.stderr[:300], txt)
        continue
    y = np.load(os.path.join(D, "o", "y.npy"))
    if y.shape != ref.shape or not np.allclose(y, ref, atol=1e-5, rtol=1e-5):
        bad += 1
        print("MISMATCH", mode, coord, near, dims, sizes, sc, y.shape, ref.shape,
              np.abs(y - ref).max() if y.shape == ref.shape else "")
print("bad", bad)
sys.exit(1 if bad else 0)
