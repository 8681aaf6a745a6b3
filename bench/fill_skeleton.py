#!/usr/bin/env python3
"""Fill a skeleton made by bench/make_skeleton.py with random weights.

    bench/fill_skeleton.py SKEL.onnx OUT.onnx [--seed N] [--std S]

Every stripped initializer (listed in the skeleton's "braid.skeleton" metadata;
without it, every float initializer that has elements but no data) gets values
drawn from normal(0, S) (default S = 0.02, GPT-2's initialisation scale), in
float32 and then converted to the tensor's own type. Each tensor is drawn from
its own generator, seeded by SHA-256 of (seed, name), so a tensor's values
depend only on the seed and its name: the same on every machine and whatever
the initializers' order. The result is a complete model fit for timing, not for
meaningful outputs (the weights are not the trained ones; activations stay
finite because the scale is small). Needs `onnx` and `numpy`.

Models whose weights exceed 1.8 GB are written with external data
(OUT.onnx.data beside OUT.onnx), which protobuf's 2 GB limit requires.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto

SKELETON_KEY = "braid.skeleton"
FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16)


def numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def has_data(t):
    return bool(t.raw_data) or len(t.float_data) > 0 or len(t.double_data) > 0 \
        or len(t.int32_data) > 0 or len(t.external_data) > 0


def to_bytes(values, data_type):
    """float32 values -> the little-endian bytes of data_type."""
    if data_type == TensorProto.FLOAT:
        return values.astype("<f4").tobytes()
    if data_type == TensorProto.FLOAT16:
        return values.astype("<f2").tobytes()
    if data_type == TensorProto.DOUBLE:
        return values.astype("<f8").tobytes()
    if data_type == TensorProto.BFLOAT16:
        # Round to nearest even on the upper 16 bits of the float32 pattern.
        bits = values.astype("<f4").view("<u4").astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return bits.astype("<u2").tobytes()
    raise ValueError(f"unsupported data type {data_type}")


def fill_values(name, count, seed, std):
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    values = rng.standard_normal(count, dtype=np.float32)
    values *= np.float32(std)
    return values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("skeleton")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--std", type=float, default=0.02)
    args = ap.parse_args(argv)
    if os.path.abspath(args.skeleton) == os.path.abspath(args.out):
        ap.error("OUT must differ from SKEL")

    model = onnx.load(args.skeleton, load_external_data=False)
    meta = None
    for p in model.metadata_props:
        if p.key == SKELETON_KEY:
            meta = json.loads(p.value)
    if meta is not None:
        names = set(meta["stripped"])
    else:
        names = {t.name for t in model.graph.initializer
                 if t.data_type in FLOAT_TYPES and numel(t) > 0 and not has_data(t)}

    filled, total = 0, 0
    for t in model.graph.initializer:
        if t.name not in names:
            continue
        if t.data_type not in FLOAT_TYPES:
            sys.exit(f"fill_skeleton: {t.name}: data type {t.data_type} is not a float type")
        if has_data(t):
            sys.exit(f"fill_skeleton: {t.name} is listed as stripped but holds data")
        n = numel(t)
        t.raw_data = to_bytes(fill_values(t.name, n, args.seed, args.std), t.data_type)
        filled += 1
        total += len(t.raw_data)
    missing = names - {t.name for t in model.graph.initializer}
    if missing:
        sys.exit(f"fill_skeleton: stripped initializers missing from the graph: {sorted(missing)[:5]}")

    props = [p for p in model.metadata_props if p.key != SKELETON_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(props)
    model.metadata_props.add(key="braid.filled",
                             value=json.dumps({"seed": args.seed, "std": args.std, "tensors": filled}))

    if total > 1800 * 1000 * 1000:
        data_name = os.path.basename(args.out) + ".data"
        if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(args.out)), data_name)):
            os.remove(os.path.join(os.path.dirname(os.path.abspath(args.out)), data_name))
        onnx.save(model, args.out, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=data_name, size_threshold=1024)
    else:
        onnx.save(model, args.out)
    print(f"{args.out}: filled {filled} initializers ({total} bytes) from normal(0, {args.std}), "
          f"seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
