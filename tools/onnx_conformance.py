#!/usr/bin/env python3
"""ONNX's backend node tests through `braid run` (tools/onnx-conformance.sh).

Regenerates the node tests from the installed onnx package (the wheel ships
the generators, onnx.backend.test.case.node.collect_testcases(), not the
data), writes each as model.onnx plus test_data_set_N/input_K.pb, runs every
data set through `braid run --input NAME=FILE.pb --output-dir DIR` (one
process per test, each under a timeout), compares the .npy outputs with the
expected ones at the test's tolerances (rtol 1e-3, atol 1e-7 for all but a
few) and prints, per op, passed / wrong value / unsupported / error counts,
then the failures, then a last line "N passed, N failed".

Exit status: 0, or 1 when braid crashed or hung on a test, or when fewer
tests than --floor passed.
"""
import argparse
import collections
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def op_of(case, ops):
    """The ONNX op a test exercises: its single node's type, else the op
    whose snake-case name is the longest prefix of the test's name."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    rest = case.name[len("test_"):]
    best = ""
    for snake_name, op in ops:
        if (rest == snake_name or rest.startswith(snake_name + "_")) and len(snake_name) > len(best):
            best, found = snake_name, op
    return found if best else (nodes[0].op_type if nodes else "?")


def out_file(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def write_case(case, root):
    import onnx
    from onnx import numpy_helper

    d = os.path.join(root, case.name)
    os.makedirs(d, exist_ok=True)
    onnx.save(case.model, os.path.join(d, "model.onnx"))
    inits = {i.name for i in case.model.graph.initializer}
    in_names = [i.name for i in case.model.graph.input if i.name not in inits]
    int_inputs = {i.name for i in case.model.graph.input if i.name not in inits
                  and i.type.tensor_type.elem_type in (6, 7)}
    out_names = [o.name for o in case.model.graph.output]
    sets = []
    for k, (inputs, outputs) in enumerate(case.data_sets):
        sd = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(sd, exist_ok=True)
        files = []
        for i, (name, value) in enumerate(zip(in_names, inputs)):
            if isinstance(value, (np.generic, int, float, bool)):
                value = np.asarray(value)
            if isinstance(value, onnx.TensorProto):  # the Cast tests' form
                proto = onnx.TensorProto()
                proto.CopyFrom(value)
                proto.name = name
            elif isinstance(value, np.ndarray):
                proto = numpy_helper.from_array(value, name)
            else:
                return None, "input %s is not a tensor" % name
            path = os.path.join(sd, "input_%d.pb" % i)
            with open(path, "wb") as f:
                f.write(proto.SerializeToString())
            files.append((name, path))
        expected = []
        for name, value in zip(out_names, outputs):
            if isinstance(value, (np.generic, int, float, bool)):
                value = np.asarray(value)
            if isinstance(value, onnx.TensorProto):
                value = numpy_helper.to_array(value)
            if not isinstance(value, np.ndarray):
                return None, "output %s is not a tensor" % name
            expected.append((name, value))
        sets.append((sd, files, expected))
    return (d, sets, int_inputs), None


def compare(expected, actual, rtol, atol):
    if expected.shape != actual.shape:
        return "shape %s, expected %s" % (actual.shape, expected.shape)
    if actual.dtype.kind == "V" and actual.dtype.itemsize == 2:  # braid's bf16
        actual = (actual.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    try:  # bfloat16 and float8 (ml_dtypes) convert; strings do not
        e = expected.astype(np.float64)
        a = actual.astype(np.float64)
    except (TypeError, ValueError):
        return "non-numeric expected output (%s)" % expected.dtype
    if expected.dtype == np.bool_:
        ok = np.array_equal(e, a)
    else:
        ok = np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    if ok:
        return None
    bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    i = np.argwhere(bad)[0] if bad.ndim else ()
    return "value %r, expected %r at %s (%d of %d differ)" % (
        a[tuple(i)], e[tuple(i)], tuple(int(x) for x in i), int(bad.sum()), bad.size)


def run_case(args, case, prepared):
    """(status, detail): status is passed, wrong, unsupported, error, crash
    or hang."""
    d, sets, int_inputs = prepared
    frozen = set()
    for sd, files, expected in sets:
        out = os.path.join(sd, "out")
        while True:
            cmd = [args.braid, "run", os.path.join(d, "model.onnx"), "--threads", "1",
                   "--devices", args.devices, "--output-dir", out]
            for name, path in files:
                flag = "--const" if name in frozen else "--input"
                cmd += [flag, "%s=%s" % (name, path)]
            try:
                p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=args.timeout)
            except subprocess.TimeoutExpired:
                return "hang", "no result after %g s" % args.timeout
            except OSError as e:
                return "error", "cannot run braid: %s" % e
            err = p.stderr.decode(errors="replace").strip().splitlines()
            msg = err[-1] if err else ""
            # braid compiles static shapes: an input that carries one is
            # frozen at import (--const), as a user would (docs/onnx.md)
            m = re.search(r'\("([^"]*)"\) must be known at import time', msg)
            if p.returncode == 1 and m and m.group(1) in dict(files) \
                    and m.group(1) not in frozen:
                frozen.add(m.group(1))
                continue
            # computed from graph inputs: freeze the integer ones (shapes)
            if p.returncode == 1 and m and not int_inputs <= frozen:
                frozen |= int_inputs
                continue
            break
        if p.returncode < 0 or p.returncode > 2:
            return "crash", "exit status %d: %s" % (p.returncode, msg)
        if p.returncode != 0:
            return ("unsupported" if "unsupported" in msg else "error"), msg
        for name, want in expected:
            try:
                got = np.load(os.path.join(out, out_file(name)))
            except Exception as e:  # noqa: BLE001 - reported as a failure
                return "error", "output %s: %s" % (name, e)
            why = compare(want, got, case.rtol, case.atol)
            if why:
                return "wrong", "output %s: %s" % (name, why)
    return "passed", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--braid", required=True)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--filter", default="", help="regex on test names")
    ap.add_argument("--floor", type=int, default=0)
    ap.add_argument("--keep", default="", help="write the tests here and keep them")
    ap.add_argument("--quiet", action="store_true", help="no list of failures")
    args = ap.parse_args()

    warnings.filterwarnings("ignore")
    import onnx
    from onnx.backend.test.case.node import collect_testcases

    with open(os.devnull, "w") as null:
        stdout = sys.stdout
        sys.stdout = null  # some generators print
        try:
            cases = collect_testcases(None)
        finally:
            sys.stdout = stdout
    if args.filter:
        cases = [c for c in cases if re.search(args.filter, c.name)]
    ops = sorted({(snake(s.name), s.name) for s in onnx.defs.get_all_schemas_with_history()
                  if s.domain in ("", "ai.onnx")})
    root = args.keep or tempfile.mkdtemp(prefix="braid-onnx-conformance-")
    results = {}
    try:
        # a copy: a rebuild while the suite runs must not change the binary
        copy = os.path.join(root, "braid")
        shutil.copy2(args.braid, copy)
        args.braid = copy
        prepared = {}
        for c in cases:
            try:
                prep, why = write_case(c, root)
            except Exception as e:  # noqa: BLE001 - a test the writer cannot express
                prep, why = None, "cannot be written: %s" % e
            if prep is None:
                results[c.name] = ("unsupported", why)
            else:
                prepared[c.name] = prep
        byname = {c.name: c for c in cases}
        with cf.ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as ex:
            futs = {ex.submit(run_case, args, byname[n], p): n for n, p in prepared.items()}
            for f in cf.as_completed(futs):
                results[futs[f]] = f.result()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    table = collections.defaultdict(collections.Counter)
    for c in cases:
        table[op_of(c, ops)][results[c.name][0]] += 1
    kinds = ["passed", "wrong", "unsupported", "error", "crash", "hang"]
    print("%-28s %7s %7s %11s %7s %7s %7s" % ("op", *kinds))
    for op in sorted(table):
        print("%-28s %7d %7d %11d %7d %7d %7d" % (op, *(table[op][k] for k in kinds)))
    total = collections.Counter(r[0] for r in results.values())
    print("%-28s %7d %7d %11d %7d %7d %7d" % ("total", *(total[k] for k in kinds)))
    if not args.quiet:
        for name in sorted(results):
            status, why = results[name]
            if status != "passed":
                print("%s %s: %s" % (status.upper(), name, why))
    passed = total["passed"]
    failed = len(cases) - passed
    bad = total["crash"] + total["hang"]
    if bad:
        print("braid crashed or hung on %d test(s)" % bad)
    if passed < args.floor:
        print("%d passed, below the floor of %d" % (passed, args.floor))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if bad or passed < args.floor else 0


if __name__ == "__main__":
    sys.exit(main())
