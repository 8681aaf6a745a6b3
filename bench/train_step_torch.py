#!/usr/bin/env python3
"""bench/train_step_torch.py — PyTorch's side of bench/gpu_train_step.c: one
training step (forward, backward, AdamW) of the fp32 MLP, batch 8192,
4 x (4096 x 4096 matmul + bias + exact GELU), loss mean(h^2), TF32 off.

torch.compile of the whole step (forward, backward and the optimizer's
update, torch.optim.AdamW with default hyper-parameters, as braid's), x
on the GPU, weights normal(0, 0.02), biases zero. Host clock around the
step + torch.cuda.synchronize(); median of 10 after 3 warm-up steps
(compilation happens in the first). Also times eager PyTorch with the
fused AdamW (fused=True) for reference. Prints
"RESULT torch_train_step compile_ms=... eager_fused_ms=..." (or
"... skipped=..." without a GPU or PyTorch)."""
import statistics
import sys
import time

B, W, L = 8192, 4096, 4
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


def main():
    try:
        import torch
    except ImportError:
        print("RESULT torch_train_step skipped=no-torch")
        return 0
    if not torch.cuda.is_available():
        print("RESULT torch_train_step skipped=no-gpu")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
