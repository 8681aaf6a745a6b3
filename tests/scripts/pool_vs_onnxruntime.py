"""Cross-check of braid's max_pool / avg_pool against onnxruntime.

Random 1-D to 3-D cases (kernels, strides, dilations for max, pads up to
half the kernel as onnxruntime requires, ceil_mode, count_include_pad): each
case is one ONNX node run by onnxruntime and the same pool written as a
.graph file run by `braid run`; the outputs must agree within 1e-5. A window
with no tap inside the input is -inf in braid (PyTorch's value) and the
lowest finite float in onnxruntime: those count as equal.

Usage: python3 tests/scripts/pool_vs_onnxruntime.py [SEED] (BRAID = the CLI,
default build/braid); prints the mismatches and "bad N". Needs numpy, onnx,
onnxruntime (pip).
"""
import numpy as np, onnx, onnxruntime as ort, subprocess, random, os, sys
from onnx import helper, TensorProto
B=os.environ.get("BRAID","build/braid")
rng=random.Random(int(sys.argv[1]) if len(sys.argv)>1 else 1)
bad=0
import tempfile
D=tempfile.mkdtemp()
for it in range(60):
    k=rng.randint(1,3); mx=rng.random()<0.5
    N,C=rng.randint(1,2),rng.randint(1,3)
    ks=[rng.randint(1,4) for _ in range(k)]; st=[rng.randint(1,3) for _ in range(k)]
    dil=[rng.randint(1,2) for _ in range(k)] if mx else [1]*k
    lo=[rng.randint(0,(ks[i]-1)//1 if ks[i]>1 else 0) for i in range(k)]
    # onnxruntime requires pads < kernel; keep pad <= k/2 for torch-like
    lo=[min(lo[i], ks[i]//2) for i in range(k)]
    hi=[min(rng.randint(0,2), ks[i]//2) for i in range(k)]
    ceil=rng.random()<0.5; cip=rng.random()<0.5 and not mx
    dims=[N,C]+[rng.randint(max(1,dil[i]*(ks[i]-1)+1-lo[i]-hi[i]),9) for i in range(k)]
    x=np.random.default_rng(it).uniform(-4,4,dims).astype(np.float32)
    np.save(os.path.join(D,"x.npy"),x)
    op="MaxPool" if mx else "AveragePool"
    attrs=dict(kernel_shape=ks,strides=st,pads=lo+hi,ceil_mode=int(ceil))
    if mx: attrs["dilations"]=dil
    else: attrs["count_include_pad"]=int(cip)
    node=helper.make_node(op,["x"],["y"],**attrs)
    g=helper.make_graph([node],"g",[helper.make_tensor_value_info("x",TensorProto.FLOAT,dims)],[helper.make_tensor_value_info("y",TensorProto.FLOAT,None)])
    m=helper.make_model(g,opset_imports=[helper.make_opsetid("",19)])
    try:
        ref=ort.InferenceSession(m.SerializeToString(),providers=["CPUExecutionProvider"]).run(None,{"x":x})[0]
    except Exception as e:
        print("ort refused",attrs,dims,str(e)[:80]); continue
    name="max_pool" if mx else "avg_pool"
    L=lambda v:"["+",".join(map(str,v))+"]"
    txt="braid-graph 1\n"+f"%0 = input f32{L(dims)} name=\"x\"\n%1 = {name} %0 kernel_shape={L(ks)} strides={L(st)} dilations={L(dil)} pads={L(lo+hi)}"+(" ceil_mode" if ceil else "")+(" count_include_pad" if cip else "")+"\noutput \"y\" = %1\n"
    open(os.path.join(D,"t.graph"),"w").write(txt)
    r=subprocess.run([B,"run",os.path.join(D,"t.graph"),"--input","x="+os.path.join(D,"x.npy"),"--output-dir",os.path.join(D,"o")],capture_output=True,text=True)
    if r.returncode: print("braid failed",r.stderr[:300],txt); bad+=1; continue
    y=np.load(os.path.join(D,"o","y.npy"))
    ref=np.where(ref<=-3.4e38,-np.inf,ref)
    if y.shape!=ref.shape or not np.allclose(y,ref,atol=1e-5,equal_nan=True):
        bad+=1; print("MISMATCH",attrs,dims,y.shape,ref.shape, np.abs(y-ref).max() if y.shape==ref.shape else "")
print("bad",bad)
sys.exit(1 if bad else 0)
