#!/usr/bin/env python3
"""Strip the weights out of an ONNX model, keeping its structure: a "skeleton".

    bench/make_skeleton.py MODEL.onnx OUT.skel.onnx [--min-elements N]

Every floating-point initializer (float32, float16, float64, bfloat16) with N or
more elements (default 4096) loses its data: raw_data, the typed fields
(float_data, ...) and any external-data reference are cleared, and its location
set back to DEFAULT. Its name, dims and data_type stay, so the model still
describes the same graph. Smaller initializers (shape constants, scalars, small
biases, every integer or bool tensor) and Constant nodes are kept intact, since
the graph's shapes and masks depend on them.

The stripped names are listed, with this script's threshold, in the model's
metadata_props under "braid.skeleton" (JSON), which bench/fill_skeleton.py reads
back to know what to fill. A skeleton is a few hundred KB for GPT-2 small or
ResNet-18 instead of 250-650 MB: small enough to move between machines by
hand. Only the `onnx` package is needed (pip install onnx). External data next
to MODEL (a model over 2 GB, or one saved with save_as_external_data) is read
and dropped too; the skeleton is always one self-contained file.
"""
import argparse
import json
import os
import sys

import onnx
from onnx import TensorProto

FLOAT_TYPES = {
    TensorProto.FLOAT: "float32",
    TensorProto.FLOAT16: "float16",
    TensorProto.DOUBLE: "float64",
    TensorProto.BFLOAT16: "bfloat16",
}

SKELETON_KEY = "braid.skeleton"


def numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def strip(model, min_elements):
    """Strips the model's large float initializers in place; returns their names."""
    stripped = []
    for t in model.graph.initializer:
        if t.data_type not in FLOAT_TYPES or numel(t) < min_elements:
            continue
        t.ClearField("raw_data")
        for field in ("float_data", "double_data", "int32_data", "uint64_data"):
            t.ClearField(field)
        t.ClearField("external_data")
        t.data_location = TensorProto.DEFAULT
        stripped.append(t.name)
    return stripped


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="the full ONNX model")
    ap.add_argument("out", help="the skeleton to write")
    ap.add_argument("--min-elements", type=int, default=4096,
                    help="strip float initializers with at least this many elements (default 4096)")
    args = ap.parse_args(argv)
    if args.min_elements < 1:
        ap.error("--min-elements must be at least 1")
    if os.path.abspath(args.model) == os.path.abspath(args.out):
        ap.error("OUT must differ from MODEL")

    # load_external_data=False: the stripped tensors' external data is never
    # read; the kept (small) ones are loaded below, one by one.
    model = onnx.load(args.model, load_external_data=False)
    base = os.path.dirname(os.path.abspath(args.model))
    stripped = strip(model, args.min_elements)
    kept_external = [t for t in model.graph.initializer
                     if t.data_location == TensorProto.EXTERNAL]
    for t in kept_external:
        onnx.external_data_helper.load_external_data_for_tensor(t, base)
        t.ClearField("external_data")
        t.data_location = TensorProto.DEFAULT

    meta = {"min_elements": args.min_elements, "stripped": stripped}
    props = [p for p in model.metadata_props if p.key != SKELETON_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(props)
    model.metadata_props.add(key=SKELETON_KEY, value=json.dumps(meta))

    onnx.save(model, args.out)
    total = sum(numel(t) for t in model.graph.initializer if t.name in set(stripped))
    print(f"{args.out}: stripped {len(stripped)} of {len(model.graph.initializer)} "
          f"initializers ({total} elements), {os.path.getsize(args.out)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
