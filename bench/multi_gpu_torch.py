#!/usr/bin/env python3
"""bench/multi_gpu_torch.py — torch.distributed NCCL all_reduce bus bandwidth
on two GPUs of this host, the baseline for bench/multi_gpu.c's all_reduce.

World of 2 processes (torch.multiprocessing.spawn), one GPU each, 256 MiB
f32 per GPU, sum; 5 warm-up calls, then 20 timed calls (each between a
barrier and torch.cuda.synchronize on the host clock); the median is
reported as bus bandwidth 2*(n-1)/n * bytes / time. Prints
"RESULT torch_allreduce busbw_gbps=..." (or "... skipped=..." without two
GPUs). Run with NCCL_NVLS_ENABLE=0 like everything on the two-GPU machine.
"""
import os
import statistics
import sys
import time

WORLD = 2
COUNT = 64 * 1024 * 1024  # f32 elements: 256 MiB
WARMUP = 5
RUNS = 20


def worker(rank, port, queue):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=WORLD,
                            device_id=torch.device("cuda", rank))
    x = torch.ones(COUNT, dtype=torch.float32, device="cuda")
    times = []
    for i in range(WARMUP + RUNS):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dist.all_reduce(x, op=dist.ReduceOp.SUM)
        torch.cuda.synchronize()
        if i >= WARMUP:
            times.append(time.perf_counter() - t0)
        x.fill_(1.0)
    # check the last result: ones summed over the world
    x.fill_(1.0)
    dist.all_reduce(x)
    ok = bool(torch.all(x == WORLD).item())
    if rank == 0:
        t = statistics.median(times)
        nbytes = COUNT * 4
        busbw = 2 * (WORLD - 1) / WORLD * nbytes / t / 1e9
        queue.put((busbw, t, ok, ".".join(map(str, torch.cuda.nccl.version()))))
    dist.destroy_process_group()


def main():
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as e:
        print(f'RESULT torch_allreduce skipped="no torch: {e}"')
        return 0
    if torch.cuda.device_count() < WORLD:
        print(f'RESULT torch_allreduce skipped="needs {WORLD} GPUs, found '
              f'{torch.cuda.device_count()}"')
        return 0
    import socket
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(port, queue), nprocs=WORLD, join=True)
    busbw, t, ok, ver = queue.get()
    print(f"RESULT torch_allreduce busbw_gbps={busbw:.1f} ms={t * 1e3:.3f} "
          f"bytes={COUNT * 4} nccl={ver} torch={torch.__version__} "
          f"correct={'yes' if ok else 'no'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
