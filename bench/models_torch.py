#!/usr/bin/env python3
"""bench/models_torch.py — PyTorch's side of tools/gpu-models.sh: GPT-2 small
(batch 1, 128 tokens, input_ids -> logits) and ResNet-18 (batch 8,
3x224x224 -> 1000 logits), built as ../shared/models/export_models.py
builds them (random weights), timed on the GPU in eager mode, with
torch.compile() and with torch.compile(mode="reduce-overhead"), fp32 with
TF32 off and again with TF32 on. Inputs live on the GPU.

Timing: CUDA events around one call, median of RUNS after WARM warm-up
calls (the first compiles); the first call's wall time is printed too.
One line per figure:
  RESULT torch model=gpt2 mode=reduce-overhead tf32=0 ms=1.910 first_s=8.9
Usage: models_torch.py [gpt2|resnet18]... (default both)."""
import statistics
import sys
import time

WARM, RUNS = 10, 50


def median_ms(fn, torch):
    times = []
    for i in range(WARM + RUNS):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        if i >= WARM:
            times.append(a.elapsed_time(b))
    return statistics.median(times)


def build(name, torch):
    torch.manual_seed(0)
    if name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257,
                         n_positions=1024, use_cache=False)
        m = GPT2LMHeadModel(cfg).eval().cuda()
        ids = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")
        mask = torch.ones_like(ids)

        def fwd(model):
            return lambda: model(input_ids=ids, attention_mask=mask,
                                 use_cache=False, return_dict=True).logits
        return m, fwd
    import torchvision
    m = torchvision.models.resnet18(weights=None).eval().cuda()
    x = torch.randn(8, 3, 224, 224, device="cuda")
    return m, lambda model: (lambda: model(x))


def main():
    import torch
    names = sys.argv[1:] or ["gpt2", "resnet18"]
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        for name in names:
            m, fwd = build(name, torch)
            for mode in ("eager", "default", "reduce-overhead"):
                torch._dynamo.reset()
                model = m if mode == "eager" else torch.compile(
                    m, mode=None if mode == "default" else mode)
                f = fwd(model)
                with torch.no_grad():
                    t0 = time.perf_counter()
                    f()
                    torch.cuda.synchronize()
                    first = time.perf_counter() - t0
                    ms = median_ms(f, torch)
                print(f"RESULT torch model={name} mode={mode} tf32={int(tf32)} "
                      f"ms={ms:.3f} first_s={first:.2f}", flush=True)
            del m


if __name__ == "__main__":
    main()
