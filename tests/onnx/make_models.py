#!/usr/bin/env python3
"""Writes the ONNX models tests/test_onnx*.c import into DIR (argv[1]):
well-formed ones with ONNX's reference outputs (onnx.reference, random
inputs from argv[2] as the seed) and hostile ones. Each good model NAME has
NAME.onnx, NAME.in<k>.pb (inputs, in graph-input order) and NAME.out<k>.pb
(outputs)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
OPSET = [helper.make_opsetid("", 17)]


def save(name, model):
    onnx.save(model, os.path.join(out, name + ".onnx"))


def good(name, graph, inputs, opset=OPSET):
    model = helper.make_model(graph, opset_imports=opset)
    model.ir_version = 8
    onnx.checker.check_model(model)
    save(name, model)
    feeds = {i.name: v for i, v in zip(graph.input, inputs)}
    results = ReferenceEvaluator(model).run(None, feeds)
    for k, v in enumerate(inputs):
        with open(os.path.join(out, "%s.in%d.pb" % (name, k)), "wb") as f:
            f.write(numpy_helper.from_array(v).SerializeToString())
    for k, v in enumerate(results):
        with open(os.path.join(out, "%s.out%d.pb" % (name, k)), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(v)).SerializeToString())


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# An MLP: Gemm (transB, alpha, beta) + Relu + MatMul + Add + Softmax, with
# random shapes and initializers (raw_data and typed float_data).
b, k, h, c = (int(x) for x in rng.integers(1, 9, 4))
w1 = numpy_helper.from_array(f32(h, k), "w1")
bias1 = helper.make_tensor("b1", TensorProto.FLOAT, [h], f32(h).tolist())  # typed
w2 = numpy_helper.from_array(f32(h, c), "w2")
nodes = [
    helper.make_node("Gemm", ["x", "w1", "b1"], ["g"], name="fc1", transB=1,
                     alpha=0.5, beta=2.0),
    helper.make_node("Relu", ["g"], ["r"], name="act"),
    helper.make_node("MatMul", ["r", "w2"], ["m"], name="fc2"),
    helper.make_node("Softmax", ["m"], ["probs"], name="softmax", axis=-1),
]
good("mlp", helper.make_graph(nodes, "mlp", [vi("x", TensorProto.FLOAT, [b, k])],
                              [vi("probs", TensorProto.FLOAT, [b, c])],
                              [w1, bias1, w2]), [f32(b, k)])

# MatMul of Transposes swapping the last two axes (x @ w.T, as PyTorch's
# exporters write a tied lm_head, and a batched a.T @ b): the importer reads
# both operands in place through the matmul's transpose flags; a Transpose
# of other axes stays a permute.
bt, mt, kt, nt = (int(x) for x in rng.integers(1, 7, 4))
nodes = [
    helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
    helper.make_node("Transpose", ["wt"], ["w"], perm=[1, 0]),
    helper.make_node("MatMul", ["at", "w"], ["y"], name="mm"),
    helper.make_node("Transpose", ["y"], ["z"], perm=[1, 0, 2]),
]
# (wt is an input: a small initializer's Transpose would fold at import)
good("matmul_transposed", helper.make_graph(
    nodes, "matmul_transposed", [vi("a", TensorProto.FLOAT, [bt, kt, mt]),
                                 vi("wt", TensorProto.FLOAT, [nt, kt])],
    [vi("z", TensorProto.FLOAT, [mt, bt, nt])]), [f32(bt, kt, mt), f32(nt, kt)])

# ConvTranspose whose output_shape is one past the natural size on both
# spatial axes (pads turn negative: positions no input reaches, then the
# bias), the extra row and column at the end (NOTSET's split) and at the
# start (SAME_UPPER's), as ONNX's reference places them.
for name, extra in (("convt_grow", {}),
                    ("convt_grow_upper", {"auto_pad": "SAME_UPPER"})):
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"],
                              name="ct", strides=[3, 2], output_shape=[10, 8],
                              **extra)]
    good(name, helper.make_graph(
        nodes, name, [vi("x", TensorProto.FLOAT, [2, 3, 3, 3]),
                      vi("w", TensorProto.FLOAT, [3, 2, 3, 3]),
                      vi("b", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [2, 2, 10, 8])]),
        [f32(2, 3, 3, 3), f32(3, 2, 3, 3), f32(2)])

# MaxPool's Indices output (flat indices into x): pads, strides and
# ceil_mode, then dilations.
for name, attrs in (("maxpool_idx", dict(kernel_shape=[3, 3], pads=[1, 0, 1, 2],
                                          strides=[2, 2], ceil_mode=1)),
                    ("maxpool_idx_dil", dict(kernel_shape=[2, 2],
                                              dilations=[2, 1], strides=[1, 2]))):
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", **attrs)]
    xin = f32(2, 3, 7, 8)
    model = helper.make_model(helper.make_graph(
        nodes, name, [vi("x", TensorProto.FLOAT, [2, 3, 7, 8])],
        [vi("y", TensorProto.FLOAT, None), vi("i", TensorProto.INT64, None)]),
        opset_imports=OPSET)
    shapes = [np.asarray(v).shape for v in
              ReferenceEvaluator(model).run(None, {"x": xin})]
    good(name, helper.make_graph(
        nodes, name, [vi("x", TensorProto.FLOAT, [2, 3, 7, 8])],
        [vi("y", TensorProto.FLOAT, list(shapes[0])),
         vi("i", TensorProto.INT64, list(shapes[1]))]), [xin])

# ... and both storage orders of one pooling side by side (the test checks
# that the column-major indices are the row-major ones rearranged; ONNX's
# reference evaluator drops the plane offset there, where its node test
# data and onnxruntime keep it).
save("maxpool_idx_orders", helper.make_model(helper.make_graph(
    [helper.make_node("MaxPool", ["x"], ["y", "ir"], name="row",
                      kernel_shape=[2, 3], strides=[1, 2], pads=[1, 1, 0, 1]),
     helper.make_node("MaxPool", ["x"], ["y2", "ic"], name="col",
                      kernel_shape=[2, 3], strides=[1, 2], pads=[1, 1, 0, 1],
                      storage_order=1)],
    "maxpool_idx_orders", [vi("x", TensorProto.FLOAT, [2, 3, 7, 8])],
    [vi("ir", TensorProto.INT64, [2, 3, 7, 4]),
     vi("ic", TensorProto.INT64, [2, 3, 7, 4])]), opset_imports=OPSET))

# ReduceMax / ReduceMin of bool (opset 20: any / all), over an empty axis
# too, where ONNX gives false (max) and true (min).
r_ax = numpy_helper.from_array(np.array([1], dtype=np.int64), "r_ax")
nodes = [
    helper.make_node("ReduceMax", ["e", "r_ax"], ["e_any"]),
    helper.make_node("ReduceMin", ["e", "r_ax"], ["e_all"]),
    helper.make_node("ReduceMax", ["f", "r_ax"], ["f_any"], keepdims=0),
    helper.make_node("ReduceMin", ["f", "r_ax"], ["f_all"], keepdims=0),
]
good("any_all", helper.make_graph(
    nodes, "any_all",
    [vi("e", TensorProto.BOOL, [2, 0, 4]), vi("f", TensorProto.BOOL, [3, 5])],
    [vi("e_any", TensorProto.BOOL, [2, 1, 4]), vi("e_all", TensorProto.BOOL, [2, 1, 4]),
     vi("f_any", TensorProto.BOOL, [3]), vi("f_all", TensorProto.BOOL, [3])],
    [r_ax]),
    [np.zeros((2, 0, 4), dtype=bool), rng.integers(0, 2, (3, 5)).astype(bool)],
    opset=[helper.make_opsetid("", 20)])

# Shape arithmetic folded at import: Shape -> Gather -> Mul -> Concat ->
# Reshape, plus Range/ConstantOfShape; the symbolic dim comes from a binding.
n = int(rng.integers(2, 6))
nodes = [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
    helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
    helper.make_node("Gather", ["s", "i2"], ["d2"], axis=0),
    helper.make_node("Mul", ["d1", "d2"], ["d12"]),
    helper.make_node("Concat", ["d0", "d12"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["flat"]),
    helper.make_node("Range", ["zero", "d12s", "one"], ["ramp"]),
    helper.make_node("Cast", ["ramp"], ["rampf"], to=TensorProto.FLOAT),
    helper.make_node("Squeeze", ["d12", "ax0"], ["d12s"]),
    helper.make_node("Add", ["flat", "rampf"], ["y"], name="add_ramp"),
]
inits = [numpy_helper.from_array(np.array([v], np.int64), nm)
         for nm, v in (("i0", 0), ("i1", 1), ("i2", 2))]
inits += [numpy_helper.from_array(np.array(v, np.int64), nm)
          for nm, v in (("zero", 0), ("one", 1))]
inits += [numpy_helper.from_array(np.array([0], np.int64), "ax0")]
nodes = nodes[:7] + [nodes[9]] + nodes[7:9] + nodes[10:]
g = helper.make_graph(nodes, "fold", [vi("x", TensorProto.FLOAT, ["batch", 3, 4])],
                      [vi("y", TensorProto.FLOAT, None)], inits)
model = helper.make_model(g, opset_imports=OPSET)
model.ir_version = 8
save("fold", model)
x = f32(n, 3, 4)
res = ReferenceEvaluator(model).run(None, {"x": x})
with open(os.path.join(out, "fold.in0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x).SerializeToString())
with open(os.path.join(out, "fold.out0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(res[0]).SerializeToString())
with open(os.path.join(out, "fold.batch"), "w") as f:
    f.write(str(n))

# int64 in and out: ids + 1 (narrowed to i32 at the boundary).
ids = rng.integers(-1000, 1000, (2, 5)).astype(np.int64)
nodes = [helper.make_node("Add", ["ids", "one"], ["next"], name="inc")]
good("ids", helper.make_graph(nodes, "ids", [vi("ids", TensorProto.INT64, [2, 5])],
                              [vi("next", TensorProto.INT64, [2, 5])],
                              [numpy_helper.from_array(np.array(1, np.int64), "one")]),
     [ids])

# LayerNormalization (issue 14): over the last axis with only Y named, one
# layer_norm op ("ln_op": scale and bias [C]; "ln_op_nobias": no bias);
# over the last two axes, or with Mean / InvStdDev named, the composite.
t, c = (int(x) for x in rng.integers(2, 40, 2))
for name, axis, outs, ins in (("ln_op", -1, ["y"], ["x", "s", "b"]),
                              ("ln_op_nobias", -1, ["y"], ["x", "s"]),
                              ("ln_axes", -2, ["y"], ["x", "s2", "b2"]),
                              ("ln_stats", -1, ["y", "mean", "inv"], ["x", "s", "b"])):
    inits = [numpy_helper.from_array(f32(c), "s"), numpy_helper.from_array(f32(c), "b"),
             numpy_helper.from_array(f32(3, c), "s2"),
             numpy_helper.from_array(f32(3, c), "b2")]
    inits = [i for i in inits if i.name in ins]
    node = helper.make_node("LayerNormalization", ins, outs, axis=axis, epsilon=1e-3)
    so = [1, 3, 1] if axis == -2 else [2, 3, 1]
    outv = [vi("y", TensorProto.FLOAT, [2, 3, c])] + (
        [vi("mean", TensorProto.FLOAT, so), vi("inv", TensorProto.FLOAT, so)]
        if len(outs) > 1 else [])
    good(name, helper.make_graph([node], name, [vi("x", TensorProto.FLOAT, [2, 3, c])],
                                 outv, inits), [3 * f32(2, 3, c) + 1])

# Scaled dot-product attention as PyTorch exports it (issue 14): head
# reshapes and transposes, q and k each times D^-1/4, MatMul, + a 0/-inf
# mask (query row 0 fully masked), Softmax, Where(IsNaN(p), 0, p), MatMul
# by v, back to [B, S, H*D]: one attention op ("sdpa_ts"); without mask
# and Where, q divided by sqrt(D) ("sdpa_nomask"): one op too; the
# probabilities also a graph output ("sdpa_probs") or a mask without the
# Where guard ("sdpa_noguard"): left unfused.
def sdpa(name, mask, guard, probs, scale_div, causal=None):
    B, S, T, H, D = 2, 5, 7, 2, 6
    if causal:
        T = S
    inits = [numpy_helper.from_array(np.array([B, S, H, D], np.int64), "qs"),
             numpy_helper.from_array(np.array([B, T, H, D], np.int64), "ks"),
             numpy_helper.from_array(np.array([B, S, H * D], np.int64), "os"),
             numpy_helper.from_array(np.array(D ** -0.25, np.float32), "c"),
             numpy_helper.from_array(np.array(D ** 0.5, np.float32), "sd"),
             numpy_helper.from_array(np.array([0], np.float32), "zero")]
    m = np.where(rng.random((1, 1, S, T)) < 0.3, -np.inf, 0).astype(np.float32)
    m[0, 0, 0, :] = -np.inf
    if causal:  # the triangle PyTorch's exporters fold: -inf or float32's lowest
        low = -np.inf if causal == "inf" else np.finfo(np.float32).min
        m = np.triu(np.full((1, 1, S, S), low, np.float32), 1)
        if causal == "almost":
            m[0, 0, 3, 1] = low
    inits.append(numpy_helper.from_array(m, "mask"))
    nodes = [helper.make_node("Reshape", ["q", "qs"], ["q4"]),
             helper.make_node("Reshape", ["k", "ks"], ["k4"]),
             helper.make_node("Reshape", ["v", "ks"], ["v4"]),
             helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3])]
    if scale_div:
        nodes += [helper.make_node("Div", ["qt", "sd"], ["qm"]),
                  helper.make_node("MatMul", ["qm", "kt"], ["sc"])]
    else:
        nodes += [helper.make_node("Mul", ["qt", "c"], ["qm"]),
                  helper.make_node("Mul", ["kt", "c"], ["km"]),
                  helper.make_node("MatMul", ["qm", "km"], ["sc"])]
    x = "sc"
    if mask:
        nodes.append(helper.make_node("Add", ["sc", "mask"], ["sm"]))
        x = "sm"
    nodes.append(helper.make_node("Softmax", [x], ["p"], axis=-1))
    pv = "p"
    if guard:
        nodes += [helper.make_node("IsNaN", ["p"], ["nan"]),
                  helper.make_node("Where", ["nan", "zero", "p"], ["pg"])]
        pv = "pg"
    nodes += [helper.make_node("MatMul", [pv, "vt"], ["a"]),
              helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["at", "os"], ["y"])]
    outs = [vi("y", TensorProto.FLOAT, [B, S, H * D])]
    if probs:
        outs.append(vi("p", TensorProto.FLOAT, [B, H, S, T]))
    ins = [vi("q", TensorProto.FLOAT, [B, S, H * D]),
           vi("k", TensorProto.FLOAT, [B, T, H * D]),
           vi("v", TensorProto.FLOAT, [B, T, H * D])]
    good(name, helper.make_graph(nodes, name, ins, outs, inits),
         [f32(B, S, H * D), f32(B, T, H * D), f32(B, T, H * D)])


sdpa("sdpa_ts", True, True, False, False)
sdpa("sdpa_nomask", False, False, False, True)
sdpa("sdpa_probs", True, True, True, False)
sdpa("sdpa_noguard", True, False, False, False)
# a static mask that is exactly the causal triangle becomes the causal flag
# ("sdpa_causal": -inf, as the TorchScript exporter folds GPT-2's;
# "sdpa_causal_min": float32's lowest, as the dynamo one does); one more
# masked key ("sdpa_causal_almost") keeps the mask
sdpa("sdpa_causal", True, True, False, False, "inf")
sdpa("sdpa_causal_min", True, True, False, False, "min")
sdpa("sdpa_causal_almost", True, True, False, False, "almost")

# ONNX's own Attention (opset 23): 4-D, a float mask and is_causal, goes
# through the attention op ("attn_op"); with softcap it stays the
# composite ("attn_softcap").
for name, extra in (("attn_op", {}), ("attn_softcap", {"softcap": 2.0})):
    B, S, T, H, D = 2, 5, 6, 3, 8
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y"], is_causal=1,
                            **extra)
    ins = [vi("q", TensorProto.FLOAT, [B, H, S, D]),
           vi("k", TensorProto.FLOAT, [B, H, T, D]),
           vi("v", TensorProto.FLOAT, [B, H, T, D]),
           vi("m", TensorProto.FLOAT, [S, T])]
    good(name, helper.make_graph([node], name, ins,
                                 [vi("y", TensorProto.FLOAT, [B, H, S, D])]),
         [f32(B, H, S, D), f32(B, H, T, D), f32(B, H, T, D), f32(S, T)],
         opset=[helper.make_opsetid("", 23)])

# Weights in an external-data file beside the model (and variants that
# try to leave the folder).
def ext_model(name, location, w):
    t = numpy_helper.from_array(w, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"),
                       ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = key, value
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"])]
    g = helper.make_graph(nodes, name, [vi("x", TensorProto.FLOAT, list(w.shape))],
                          [vi("y", TensorProto.FLOAT, list(w.shape))], [t])
    m = helper.make_model(g, opset_imports=OPSET)
    m.ir_version = 8
    save(name, m)


w = f32(300, 300)  # above the static limit: a constant read from the file
with open(os.path.join(out, "ext.bin"), "wb") as f:
    f.write(w.tobytes())
ext_model("ext", "ext.bin", w)
xe = f32(300, 300)
with open(os.path.join(out, "ext.in0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(xe).SerializeToString())
with open(os.path.join(out, "ext.out0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(xe * w).SerializeToString())
ext_model("ext_dotdot", "../../etc/passwd", w)
ext_model("ext_abs", "/etc/passwd", w)
ext_model("ext_inner_dotdot", "sub/../../ext.bin", w)
os.symlink("/etc/hostname", os.path.join(out, "link_out.bin"))
ext_model("ext_symlink", "link_out.bin", w)
ext_model("ext_short", "short.bin", w)
with open(os.path.join(out, "short.bin"), "wb") as f:
    f.write(b"\0" * 16)

# Hostile graphs.
x3 = vi("x", TensorProto.FLOAT, [3])
y3 = vi("y", TensorProto.FLOAT, [3])


def raw(name, nodes, inputs=(x3,), outputs=(y3,), inits=()):
    g = helper.make_graph(nodes, name, list(inputs), list(outputs), list(inits))
    m = helper.make_model(g, opset_imports=OPSET)
    m.ir_version = 8
    save(name, m)


raw("dangling", [helper.make_node("Relu", ["nowhere"], ["y"])])
raw("cyclic", [helper.make_node("Add", ["x", "b"], ["a"]),
               helper.make_node("Relu", ["a"], ["b"]),
               helper.make_node("Relu", ["b"], ["y"])])
raw("duplicate", [helper.make_node("Relu", ["x"], ["y"]),
                  helper.make_node("Neg", ["x"], ["y"])])
raw("missing_init", [helper.make_node("Mul", ["x", "w"], ["y"])])
raw("unsupported", [helper.make_node("NonZero", ["x"], ["y"], name="nz")])
raw("no_output_node", [helper.make_node("Relu", ["x"], ["r"])])
raw("unbound", [helper.make_node("Relu", ["x"], ["y"])],
    inputs=(vi("x", TensorProto.FLOAT, ["n", 3]),),
    outputs=(vi("y", TensorProto.FLOAT, ["n", 3]),))
def bare(dims):
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend(dims)
    return t


big = bare([1 << 40, 1 << 40])
raw("huge_dims", [helper.make_node("Mul", ["x", "w"], ["y"])], inits=(big,))
neg = bare([-3])
raw("negative_dims", [helper.make_node("Mul", ["x", "w"], ["y"])], inits=(neg,))
short = bare([3])
short.float_data.append(1.0)
raw("short_data", [helper.make_node("Mul", ["x", "w"], ["y"])], inits=(short,))
raw("reshape_dynamic", [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
    inputs=(x3, vi("s", TensorProto.INT64, [1])))

# Deeply nested attribute graphs (If's then_branch), 200 levels, encoded
# by hand: Python's protobuf refuses that depth itself.
def key(field, wt):
    return varint(field << 3 | wt)


def varint(v):
    b = bytearray()
    while True:
        b.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(b)


def ld(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


graph = ld(1, ld(1, b"x") + ld(2, b"y") + ld(4, b"Relu"))  # GraphProto.node
for _ in range(200):
    attr = ld(1, b"then_branch") + key(20, 0) + varint(5) + ld(6, graph)
    node = ld(1, b"c") + ld(2, b"y") + ld(4, b"If") + ld(5, attr)
    graph = ld(1, node)
opset = ld(8, key(2, 0) + varint(17))
with open(os.path.join(out, "deep.onnx"), "wb") as f:
    f.write(key(1, 0) + varint(8) + opset + ld(7, graph))

# ONNX names braid spells differently: an input with ':' and an output
# with '::' and '/' (file name out__y_z.npy).
nodes = [helper.make_node("Neg", ["in:put"], ["out::y/z"], name="neg")]
good("names", helper.make_graph(nodes, "names", [vi("in:put", TensorProto.FLOAT, [2, 3])],
                                [vi("out::y/z", TensorProto.FLOAT, [2, 3])]), [f32(2, 3)])
