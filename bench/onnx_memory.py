#!/usr/bin/env python3
"""Peak RSS of importing an ONNX model against its file size (docs/onnx.md).

Writes a synthetic model of about SIZE MB (default 300: MatMuls over
2048x2048 f32 initializers, made with the onnx package) and a one-node model
into a temporary folder, then reads each with `braid check` under
/usr/bin/time's maximum-RSS count. The one-node model gives the tool's own
baseline (the libraries it maps); the import's cost is the difference.
usage: bench/onnx_memory.py [--braid build/braid] [--size MB]"""
import argparse
import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(path, mats):
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in range(mats):
        w = (rng.standard_normal((2048, 2048), dtype=np.float32) * 0.01)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["h%d" % i]))
        prev = "h%d" % i
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 2048])], [helper.make_tensor_value_info(
            prev, TensorProto.FLOAT, [1, 2048])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def peak_kb(braid, path):
    p = subprocess.run(["/usr/bin/time", "-v", braid, "check", path],
                       capture_output=True, text=True, check=True)
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--braid", default=os.path.join(os.path.dirname(__file__), "..", "build", "braid"))
    ap.add_argument("--size", type=int, default=300)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        big, tiny = os.path.join(d, "big.onnx"), os.path.join(d, "tiny.onnx")
        model(big, max(1, a.size * 2**20 // (2048 * 2048 * 4)))
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tiny)
        size = os.path.getsize(big)
        base = min(peak_kb(a.braid, tiny) for _ in range(3))
        peak = min(peak_kb(a.braid, big) for _ in range(3))
        extra = (peak - base) * 1024
        print("file %.1f MB; braid check peak %.1f MB, baseline %.1f MB; "
              "import %.1f MB = %.2fx the file" % (size / 2**20, peak / 1024,
                                                   base / 1024, extra / 2**20,
                                                   extra / size))


if __name__ == "__main__":
    main()
