"""The tuner on a GPU: how fast it finds the hand-tuned GEMM, its time per trial against
Triton's autotune, and how its trials per second grow with a second GPU.

    python benchmarks/tune.py gemm [--size 4096]      # first run, fresh caches: wall-clock,
                                                      # best vs examples/gpu_gemm.py
    python benchmarks/tune.py gemm --fp16             # the same for the tensor-core GEMM
    python benchmarks/tune.py triton [--configs 16]   # Triton's autotune, time per config
    python benchmarks/tune.py gpus [--size 8192]      # Dask, one worker per GPU: 1 vs all
    python benchmarks/tune.py gpus --kept             # ... compile processes started and
                                                      # schedlang loaded in the workers
                                                      # before the clock too

Each part prints its figures; `gemm` re-times the best schedule found and the hand-tuned one in
the same process, alternating, and prints their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _fresh_caches() -> None:
    """A first run: no kernel, cubin or tuning log from earlier runs."""
    os.environ["SCHEDLANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="schedlang-tune-")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-tune-")


def gemm(size: int, search: str, trials: int | None, fp16: bool) -> None:
    """The float32 GEMM template (`examples/tune_gemm.py`) against `examples/gpu_gemm.py`, or
    with `fp16` the warpgroup tensor-core template (`examples/tune_gemm_fp16.py`) against
    `examples/gpu_gemm_wgmma.py`'s fastest options."""
    import numpy as np

    import schedlang as sl
    from examples import gpu_gemm, gpu_gemm_wgmma, tune_gemm, tune_gemm_fp16

    _fresh_caches()
    template, target = (tune_gemm_fp16.gemm, "cuda") if fp16 else (tune_gemm.gemm, tune_gemm.TARGET)
    start = time.perf_counter()
    log = sl.tune.run(template(size, size, size), target=target, search=search, trials=trials)
    wall = time.perf_counter() - start
    best = log.best()
    print(f"tuning {len(log)} points ({log.counts()}) took {wall:.1f} s wall-clock")
    measured = statistics.mean(t.measure_s for t in log if t.ok)
    built = statistics.mean(t.build_s for t in log if t.ok)
    print(f"per trial: {wall / len(log) * 1e3:.0f} ms; per kernel built {built * 1e3:.0f} ms "
          f"(in parallel), measured {measured * 1e3:.0f} ms; best {best.knobs}")  # fmt: skip
    start = time.perf_counter()
    again = sl.tune.run(template(size, size, size), target=target, search=search, trials=trials)
    print(f"asking again: {time.perf_counter() - start:.2f} s, same best: {again.best() == best}")

    rng = np.random.default_rng(0)
    if fp16:
        a = sl.array(rng.standard_normal((size, size)).astype(np.float16))
        b = sl.array(rng.standard_normal((size, size)).astype(np.float16))
        hand = gpu_gemm_wgmma.build(size, size, size, **gpu_gemm_wgmma.FAST)
    else:
        a = sl.array(rng.standard_normal((size, size), dtype=np.float32))
        b = sl.array(rng.standard_normal((size, size), dtype=np.float32))
        hand = gpu_gemm.build(size, size, size)
    c = sl.empty((size, size))
    found = best.build()
    times = {"found": [], "hand": []}
    for _ in range(5):
        times["found"].append(found.time(a, b, c, repeat=20))
        times["hand"].append(hand.time(a, b, c, repeat=20))
    flops = 2.0 * size**3
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:>6}: {median * 1e3:.3f} ms  {flops / median / 1e12:.1f} TFLOP/s")
    ratio = statistics.median(times["hand"]) / statistics.median(times["found"])
    print(f"found / hand-tuned speed: {ratio:.3f}x")


def triton(size: int, configs: int) -> None:
    """Triton's autotune over `configs` matmul configurations: the first call compiles and
    benchmarks each (as `@triton.autotune` does), from empty caches."""
    import torch
    import triton
    import triton.language as tl

    _fresh_caches()
    space = [
        triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=st)
        for bm in (64, 128)
        for bn in (64, 128)
        for bk in (16, 32)
        for w in (4, 8)
        for st in (2, 3)
    ][:configs]

    @triton.autotune(configs=space, key=["m", "n", "k"])
    @triton.jit
    def matmul(a, b, c, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for step in range(0, tl.cdiv(k, BK)):
            kk = step * BK + rk
            x = tl.load(a + rm[:, None] * k + kk[None, :], mask=kk[None, :] < k, other=0.0)
            y = tl.load(b + kk[:, None] * n + rn[None, :], mask=kk[:, None] < k, other=0.0)
            acc = tl.dot(x, y, acc, input_precision="ieee")
        tl.store(c + rm[:, None] * n + rn[None, :], acc)

    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    c = torch.empty(size, size, device="cuda")

    def grid(meta):
        return (triton.cdiv(size, meta["BM"]), triton.cdiv(size, meta["BN"]))

    torch.cuda.synchronize()
    start = time.perf_counter()
    matmul[grid](a, b, c, size, size, size)
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    torch.testing.assert_close(c, a @ b, rtol=1e-3, atol=1e-2)
    print(f"triton autotune over {len(space)} configs: {wall:.1f} s, "
          f"{wall / len(space) * 1e3:.0f} ms per config; best {matmul.best_config}")  # fmt: skip


def gpus(size: int, trials: int | None, search: str, kept: bool) -> None:
    """Trials per second on one GPU and on all, each a Dask worker (dask-cuda), from fresh
    caches each time; the clusters start before the clock does, and with `kept` the compile
    processes too (a `sl.tune.Compilers` for each run, as a notebook keeps one), and the
    workers load schedlang (as they have in a session that tuned on them before). Also the rate
    from the first measured trial on, when every worker has its reference and the compile
    processes run."""
    import distributed
    from dask_cuda import LocalCUDACluster

    import schedlang as sl
    from examples import tune_gemm
    from schedlang.platform_info import cuda_devices

    count = len(cuda_devices())
    rates, steady = {}, {}
    for visible in sorted({1, count}):
        devices = ",".join(str(k) for k in range(visible))
        _fresh_caches()  # before any process starts: they take the cache folder with them
        compilers = sl.tune.Compilers() if kept else None
        with LocalCUDACluster(CUDA_VISIBLE_DEVICES=devices, threads_per_worker=1,
                              dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:  # fmt: skip
            if compilers is not None:
                # as in a session that tuned before: schedlang and LLVM loaded in the compile
                # processes, schedlang in the workers
                compilers.ready()
                client.run(_load_schedlang)
            task = tune_gemm.gemm(size, size, size)
            arrived = []

            def heard(trial, arrived=arrived) -> None:
                if trial.ok:
                    arrived.append(time.perf_counter())

            start = time.perf_counter()
            log = sl.tune.run(task, target=tune_gemm.TARGET, search=search, trials=trials,
                              cluster=client, progress=False, callback=heard,
                              workers=compilers)  # fmt: skip
            wall = time.perf_counter() - start
        if compilers is not None:
            compilers.close()
        rates[visible] = len(log) / wall
        steady[visible] = (len(arrived) - 1) / (arrived[-1] - arrived[0])
        measured = statistics.mean(t.measure_s for t in log if t.ok)
        print(f"{visible} GPU(s): {len(log)} trials in {wall:.1f} s, {rates[visible]:.2f}/s; "
              f"first measured after {arrived[0] - start:.1f} s, then {steady[visible]:.2f} "
              f"measured/s ({measured * 1e3:.0f} ms each); {log.counts()}; "
              f"{sorted({t.device for t in log if t.ok})}")  # fmt: skip
    if count > 1:
        print(
            f"{count} GPUs / 1 GPU: trials per second {rates[count] / rates[1]:.2f}x, "
            f"measured per second from the first {steady[count] / steady[1]:.2f}x"
        )


def _load_schedlang() -> None:
    import schedlang.tune.cluster  # noqa: F401


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=["gemm", "triton", "gpus"])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--search", default="grid")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--configs", type=int, default=32)
    parser.add_argument("--fp16", action="store_true", help="the tensor-core GEMM template")
    parser.add_argument("--kept", action="store_true",
                        help="compile processes started and workers loaded first")  # fmt: skip
    args = parser.parse_args()
    if args.part == "gemm":
        gemm(args.size, args.search, args.trials, args.fp16)
    elif args.part == "triton":
        triton(args.size, args.configs)
    else:
        gpus(args.size, args.trials, args.search, args.kept)


if __name__ == "__main__":
    main()
