#!/usr/bin/env python3
"""bench/train_step_torch.py — PyTorch's side of the training-step benchmarks
(issue 15), one training step (forward, backward, AdamW), fp32, TF32 off:

  mlp:  bench/gpu_train_step.c: the MLP, batch 8192, 4 x (4096 x 4096
        matmul + bias + exact GELU), loss mean(h^2);
  gpt2: bench/gpu_train_gpt2.c: one GPT-2 small block (bench/gpt2_block.h),
        batch 8, 512 tokens, width 768, 12 heads, MLP 3072, loss
        mean(out^2): ln_1, c_attn + bias, split into q, k, v heads,
        q k^T / sqrt(64), causal mask (-inf), softmax, . v, c_proj + bias,
        residual, ln_2, c_fc + bias, exact GELU, c_proj + bias, residual;
        written with plain torch ops as braid's graph (no
        scaled_dot_product_attention, no transformers); weights
        normal(0, 0.02), biases 0, layer-norm gamma 1, beta 0, eps 1e-5.

torch.compile of the whole step (forward, backward and the optimizer's
update, torch.optim.AdamW with default hyper-parameters, as braid's), x
on the GPU, weights normal(0, 0.02), biases zero. Host clock around the
step + torch.cuda.synchronize(); median of 10 after 3 warm-up steps
(compilation happens in the first). Also times eager PyTorch with the
fused AdamW (fused=True) for reference. Prints
"RESULT torch_train_step compile_ms=... eager_fused_ms=..." (mlp) and
"RESULT torch_train_gpt2 ..." (gpt2), or "... skipped=..." without a GPU or
PyTorch. `--only mlp` or `--only gpt2` runs one of them (bench/gpu.sh runs
each under its own time limit); the default runs both."""
import math
import os
import statistics
import sys
import time

B, W, L = 8192, 4096, 4
GB, GT, GC, GH = 8, 512, 768, 12  # GPT-2 block: batch, tokens, width, heads
WARM, RUNS = 3, 10


def timed(step, torch):
    times = []
    for i in range(WARM + RUNS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if i >= WARM:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def model(torch):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.rand(B, W, device="cuda", generator=g) * 3.4 - 1.7)
    ps = []
    for _ in range(L):
        w = torch.empty(W, W, device="cuda").normal_(0, 0.02, generator=g)
        ps += [w.requires_grad_(), torch.zeros(W, device="cuda", requires_grad=True)]
    return x, ps


def make_step(torch, x, ps, opt):
    F = torch.nn.functional

    def step():
        h = x
        for i in range(L):
            h = F.gelu(h @ ps[2 * i] + ps[2 * i + 1])
        loss = (h * h).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def gpt2_model(torch):
    """x [GB, GT, GC] uniform in [-1.7, 1.7); the block's 12 parameters in
    bench/gpt2_block.h's order; the causal mask [GT, GT] (True: kept)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.rand(GB, GT, GC, device="cuda", generator=g) * 3.4 - 1.7
    shapes = [(GC,), (GC,), (GC, 3 * GC), (3 * GC,), (GC, GC), (GC,),
              (GC,), (GC,), (GC, 4 * GC), (4 * GC,), (4 * GC, GC), (GC,)]
    ps = []
    for i, shp in enumerate(shapes):
        if i in (0, 6):  # layer-norm gamma
            p = torch.ones(shp, device="cuda")
        elif i % 2 == 1:  # biases, layer-norm beta
            p = torch.zeros(shp, device="cuda")
        else:
            p = torch.empty(shp, device="cuda").normal_(0, 0.02, generator=g)
        ps.append(p.requires_grad_())
    mask = torch.tril(torch.ones(GT, GT, dtype=torch.bool)).to("cuda")
    return x, ps, mask


def make_gpt2_step(torch, x, ps, mask, opt):
    F = torch.nn.functional
    D = GC // GH

    def heads(t):  # [GB*GT, GC] -> [GB, GH, GT, D]
        return t.reshape(GB, GT, GH, D).permute(0, 2, 1, 3)

    def step():
        x2 = x.reshape(GB * GT, GC)
        h = F.layer_norm(x2, (GC,), ps[0], ps[1], 1e-5)
        qkv = h @ ps[2] + ps[3]
        q, k, v = qkv.split(GC, dim=1)
        q, k, v = heads(q), heads(k), heads(v)
        att = (q @ k.transpose(-2, -1)) * (1 / math.sqrt(D))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).permute(0, 2, 1, 3).reshape(GB * GT, GC)
        x1 = x2 + (y @ ps[4] + ps[5])
        h = F.layer_norm(x1, (GC,), ps[6], ps[7], 1e-5)
        h = F.gelu(h @ ps[8] + ps[9])
        out = x1 + (h @ ps[10] + ps[11])
        loss = (out * out).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


def profile(torch, step):
    """The compiled step's GPU kernels over 5 steps (BENCH_PROFILE=1), by
    total CUDA time: what bench/gpu_train_gpt2's profile is compared with."""
    from torch.profiler import ProfilerActivity, profile as tprofile
    step()
    torch.cuda.synchronize()
    with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=40,
                                    max_name_column_width=70))


def run_mlp(torch):
    x, ps = model(torch)
    opt = torch.optim.AdamW(ps, fused=True)
    eager = timed(make_step(torch, x, ps, opt), torch)
    x, ps = model(torch)
    opt = torch.optim.AdamW(ps)
    compiled = float("nan")
    try:
        compiled = timed(torch.compile(make_step(torch, x, ps, opt)), torch)
    except Exception as e:  # report, keep the eager figure
        print("torch.compile failed:", repr(e)[:300], file=sys.stderr)
    print(f"train step fp32 {B} x {L} x {W}: torch.compile {compiled:.3f} ms, "
          f"eager + fused AdamW {eager:.3f} ms")
    print(f"RESULT torch_train_step compile_ms={compiled:.4f} "
          f"eager_fused_ms={eager:.4f}")


def run_gpt2(torch):
    x, ps, mask = gpt2_model(torch)
    opt = torch.optim.AdamW(ps, fused=True)
    eager = timed(make_gpt2_step(torch, x, ps, mask, opt), torch)
    x, ps, mask = gpt2_model(torch)
    opt = torch.optim.AdamW(ps)
    compiled = float("nan")
    t0 = time.perf_counter()
    try:
        compiled = timed(torch.compile(make_gpt2_step(torch, x, ps, mask, opt)),
                         torch)
    except Exception as e:  # report, keep the eager figure
        print("torch.compile failed:", repr(e)[:300], file=sys.stderr)
    if os.environ.get("BENCH_PROFILE") == "1" and compiled == compiled:
        profile(torch, torch.compile(make_gpt2_step(torch, x, ps, mask, opt)))
    print(f"train step fp32 GPT-2 block, batch {GB} x {GT} tokens, width {GC}, "
          f"{GH} heads: torch.compile {compiled:.3f} ms "
          f"({time.perf_counter() - t0:.1f} s with compilation), "
          f"eager + fused AdamW {eager:.3f} ms")
    print(f"RESULT torch_train_gpt2 compile_ms={compiled:.4f} "
          f"eager_fused_ms={eager:.4f}")


def main():
    only = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--only" else None
    if len(sys.argv) > 1 and only not in ("mlp", "gpt2"):
        print("usage: train_step_torch.py [--only mlp|gpt2]", file=sys.stderr)
        return 2
    names = {"mlp": "torch_train_step", "gpt2": "torch_train_gpt2"}
    todo = [only] if only else ["mlp", "gpt2"]
    try:
        import torch
    except ImportError:
        for w in todo:
            print(f"RESULT {names[w]} skipped=no-torch")
        return 0
    if not torch.cuda.is_available():
        for w in todo:
            print(f"RESULT {names[w]} skipped=no-gpu")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for w in todo:
        run_mlp(torch) if w == "mlp" else run_gpt2(torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
