"""Attention against torch's ``scaled_dot_product_attention``, each of its backends (flash,
cuDNN, efficient) in the same process, at FlashAttention 3's shapes: batch x seqlen = 16k
tokens, hidden 2048 (16 heads of 128 or 32 heads of 64), seqlen 512 to 16k, causal or not,
fp16 or bf16. TFLOP/s = 4 * B * H * L^2 * D, halved for causal.

schedlang's kernel is ``examples/gpu_attention.py``: attention written as its definition, fused
by ``s.online([M, Z, O], factor)`` into one pass over blocks of keys. ``--schedule wgmma`` (the
default) is the tensor-core kernel, FlashAttention's on Hopper (``wgmma_schedule``, its
options the fastest measured: `_wgmma`). ``--schedule fused`` computes the whole scan inside
each thread's loop over its query row on the CUDA cores: one kernel, the states in registers,
keys and values staged in shared memory per block of keys. ``--schedule stages`` binds each
stage to blocks and threads of its own kernel, the scores and the states in global memory, so
it runs only where they fit (``--ours-limit`` GB). Each is checked against torch's math
backend in float64 first.

    python benchmarks/attention.py [--seqlens 512,1024] [--heads-dim 64,128] [--causal both]
        [--dtypes float16,bfloat16] [--ours] [--schedule wgmma] [--factor 16] [--rows 64]
        [--store registers] [--repeat 20]

``--build-time`` needs no GPU: the seconds of building the tensor-core kernel (``wgmma``, the
tuned shape) at L = 4096, fresh (a new process, the disk cache off) and step by step (the
compile cache cleared), and ptxas's seconds for its PTX: the median and the least of
``--repeat`` processes (at most 5), which find schedlang's modules compiled to bytecode, as an
installed package has them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import schedlang as sl  # noqa: E402
from benchmarks.gpu import event_time  # noqa: E402
from examples import gpu_attention  # noqa: E402

TOKENS = 16384
HIDDEN = 2048
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def shape(seqlen: int, head_dim: int) -> tuple[int, int, int, int]:
    """(batch, heads, seqlen, head dim) of FA3's benchmark."""
    return TOKENS // seqlen, HIDDEN // head_dim, seqlen, head_dim


def flops(b: int, h: int, n: int, d: int, causal: bool) -> float:
    return 4 * b * h * n * n * d / (2 if causal else 1)


def torch_seconds(q, k, v, causal: bool, backend, repeat: int) -> float | None:
    """A backend's median seconds, None where it does not take the case."""
    try:
        with sdpa_kernel([backend]):
            run = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
                q, k, v, is_causal=causal
            )
            run()
            return event_time(run, repeat)
    except RuntimeError:
        return None


def ours_bytes(bh: int, n: int, d: int, factor: int) -> float:
    """Global memory of the scores and the running states (fp32)."""
    steps = -(-n // factor) + 1
    return 4.0 * (bh * n * n + steps * bh * n * (d + 2) + steps * bh * n * (d + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    parser.add_argument("--head-dims", default="64,128")
    parser.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    parser.add_argument("--dtypes", default="float16,bfloat16")
    parser.add_argument("--ours", action="store_true", help="time schedlang's kernel too")
    parser.add_argument("--ours-limit", type=float, default=8.0, help="GB it may take")
    parser.add_argument(
        "--factor",
        type=int,
        default=None,
        help="keys per block of online (default: 64 for stages; for fused, 1024 / head dim up "
        "to 16, so that the block's unrolled products stay within the unroll limit)",
    )
    parser.add_argument(
        "--schedule",
        default="wgmma",
        choices=["fused", "stages", "wgmma"],
        help="one kernel, a thread per query row (fused), one kernel on the tensor cores, a "
        "warpgroup per 64 rows (wgmma), or a kernel per stage (stages)",
    )
    parser.add_argument(
        "--rows", type=int, default=None, help="query rows per block (fused: 64, wgmma: 128)"
    )
    parser.add_argument(
        "--stages", type=int, default=None, help="copies of K and V in flight (wgmma: 3 at d = 64)"
    )
    parser.add_argument("--keys", type=int, default=None, help="keys per block (wgmma: 128)")
    parser.add_argument(
        "--copies",
        default="auto",
        choices=["auto", "tma", "async"],
        help="wgmma: K and V by the copy engine from the block's first thread (tma) or by "
        "every thread's cp.async (async); auto: tma at d = 128 or L >= 2048",
    )
    parser.add_argument(
        "--persistent",
        type=int,
        default=None,
        help="wgmma: that many blocks take the (head, rows) tiles in turn (0: a block a tile; "
        "default at d = 128 and L <= 1024: a block a multiprocessor unmasked, under a causal "
        "mask the most blocks whose count shares no factor with the row tiles of a head; "
        "else 0)",
    )
    parser.add_argument(
        "--warp-specialize",
        default="auto",
        choices=["auto", "yes", "no"],
        help="wgmma with the copy engine: a producer warpgroup issues the copies and hands "
        "its registers to the consumers (else the block's first thread); auto: with 3 stages "
        "at d = 128 without persistent blocks",
    )
    parser.add_argument(
        "--overlap",
        default="auto",
        choices=["auto", "yes", "no"],
        help="wgmma with the copy engine: a step's second products issued in the next step, "
        "beside its softmax (FlashAttention 3's intra-warpgroup overlap); auto: with 3 "
        "stages (d = 128 from L = 2048)",
    )
    parser.add_argument(
        "--turns",
        default="no",
        choices=["yes", "no"],
        help="wgmma with a producer warpgroup: the two consumer warpgroups take turns at the "
        "tensor cores (FlashAttention 3's pingpong)",
    )
    parser.add_argument(
        "--threshold",
        default="auto",
        help="wgmma: the sums taken against a reference maximum that follows the running one "
        "only once it has grown past it by this much in the exponent, the output's rescale "
        "skipped where its factors are 1 (online's threshold=; FlashAttention 4's lazy "
        "rescale); a number, none, or auto: 8 with a producer warpgroup",
    )
    parser.add_argument(
        "--store",
        default="registers",
        choices=["registers", "tma"],
        help="wgmma: the output stored from registers, or by the copy engine from a shared "
        "staging (K's tiles, reused once the last scores have read them)",
    )
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--build-time", action="store_true", help="time the wgmma build only")
    parser.add_argument("--build-one", help=argparse.SUPPRESS)  # "d causal", in a subprocess
    args = parser.parse_args()
    if args.build_one:
        d, causal = args.build_one.split()
        print(json.dumps(_build_once(int(d), causal == "1")))
        return
    if args.build_time:
        _report_build_time(args)
        return
    causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    names = list(BACKENDS) + (["schedlang"] if args.ours else [])
    header = ["dtype", "causal", "B", "H", "L", "D", *(f"{x} TFLOP/s" for x in names)]
    if args.ours:
        header += [f"schedlang / {x}" for x in BACKENDS]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for dtype in args.dtypes.split(","):
        for d in map(int, args.head_dims.split(",")):
            for n in map(int, args.seqlens.split(",")):
                for causal in causals:
                    print(_row(dtype, causal, n, d, args), flush=True)


def _row(dtype: str, causal: bool, n: int, d: int, args) -> str:
    b, h, n, d = shape(n, d)
    torch_dtype = getattr(torch, dtype)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch_dtype) for _ in range(3))
    work = flops(b, h, n, d, causal)
    seconds = {
        name: torch_seconds(q, k, v, causal, be, args.repeat) for name, be in BACKENDS.items()
    }
    if args.ours:
        seconds["schedlang"] = _ours(q, k, v, causal, dtype, args)
    rate = {x: ("-" if s is None else f"{work / s / 1e12:.1f}") for x, s in seconds.items()}
    cells = [dtype, "yes" if causal else "no", str(b), str(h), str(n), str(d)]
    cells += [rate[x] for x in seconds]
    if args.ours:
        ours = seconds["schedlang"]
        for x in BACKENDS:
            peer = seconds[x]
            cells.append("-" if ours is None or peer is None else f"{peer / ours:.3f}x")
    return "| " + " | ".join(cells) + " |"


def _ours(q, k, v, causal: bool, dtype: str, args) -> float | None:
    b, h, n, d = q.shape
    if args.schedule == "wgmma":
        tensors = gpu_attention.tensor_core_attention(b * h, n, d, dtype, causal)
        persistent = args.persistent
        if persistent is None:
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            short = d > 64 and n <= 1024
            persistent = _blocks(sms, n // (args.rows or 128), causal) if short else 0
        shape = (args.rows, args.keys, args.stages, args.copies, persistent, args.overlap)
        ws = args.warp_specialize
        s = _wgmma(
            tensors, d, n, causal, *shape, warp_specialize=ws, turns=args.turns,
            threshold=args.threshold, store=args.store,
        )  # fmt: skip
        return _timed(s, tensors, q, k, v, causal, args.repeat, _target(d))
    tensors = gpu_attention.attention(b * h, n, d, dtype, causal)
    if args.schedule == "fused":
        factor = args.factor or min(16, 1024 // d)
        s = gpu_attention.fused_schedule(*tensors, factor=factor, rows=args.rows or 64)
    elif ours_bytes(b * h, n, d, args.factor or 64) > args.ours_limit * 1e9:
        return None
    else:
        s = gpu_attention.schedule(*tensors[:3], *tensors[3:], factor=args.factor or 64)
    return _timed(s, tensors, q, k, v, causal, args.repeat)


def _blocks(sms: int, row_tiles: int, causal: bool) -> int:
    """Persistent blocks for short sequences: one a multiprocessor; under a causal mask the
    most whose count shares no factor with a head's `row_tiles`. Block b takes tiles b, b +
    P, ..., the row tile of each ``(b + k P) % row_tiles``: with P a multiple of `row_tiles`
    every block would take the same rows of every head, the blocks of the last rows all the
    long tiles (L = 512 on 132 blocks: 0.80x flash against 0.95x with 131, NOTES.md)."""
    if not causal:
        return sms
    return next(p for p in range(sms, 0, -1) if math.gcd(p, row_tiles) == 1)


def _wgmma(
    tensors, d: int, n: int, causal: bool, rows=None, keys=None, stages=None, copies="auto",
    persistent=0, overlap="auto", warp_specialize="auto", turns="no", threshold="auto",
    store="registers",
):  # fmt: skip
    """The tensor-core schedule, by default the fastest measured (NOTES.md): 128 rows and 128 keys
    a block (`_keys`: 64 for a short causal mask at d = 64); K and V by the copy engine at
    d = 128 and from L = 2048 (3 stages at d = 128 from L = 2048, else 2), by cp.async at d = 64
    below (3 stages, 2 for a causal L <= 1024, whose blocks see few steps); `persistent` blocks
    taking the tiles in turn if given (`_ours` gives them at d = 128 and L <= 1024, where a
    block a tile exposes each tile's prologue and epilogue, `_blocks` of them; from L = 2048 a
    causal tile's work differs by up to L / 128 times, and blocks taking them in a fixed turn
    end unevenly: slower there, NOTES.md); with 3 stages of the copy engine's, a step's second
    products beside the next step's softmax (`overlap`; 1.1x at d = 128 from L = 2048), and at
    d = 128 a producer warpgroup issuing the copies, its registers handed to the consumers
    (`warp_specialize`); its consumers taking turns at the tensor cores if asked (`turns`); with
    `threshold` (by default 8 with the producer warpgroup: 0.99-1.10x there, 1.016x on average,
    NOTES.md), online's lagging reference maximum and the rescale skipped where it is by 1."""
    tma = copies == "tma" or (copies == "auto" and (d > 64 or n >= 2048))
    if tma:
        default = 3 if d > 64 and n >= 2048 else 2
    else:
        default = 3 if d <= 64 and not (causal and n <= 1024) else 2
    stages = stages or default
    if overlap == "auto":  # the copy it issues a step late lands in time with 3 stages
        overlap = "yes" if stages >= 3 and persistent == 0 else "no"
    if warp_specialize == "auto":  # 1.04-1.19x the first thread's issue there (NOTES.md)
        warp_specialize = "yes" if stages >= 3 and d > 64 and persistent == 0 else "no"
    if threshold == "auto":
        threshold = 8.0 if warp_specialize == "yes" and tma else None
    elif threshold == "none":
        threshold = None
    return gpu_attention.wgmma_schedule(
        *tensors,
        rows=rows or 128,
        keys=keys or _keys(d, n, causal),
        stages=stages,
        tma=tma,
        persistent=persistent,
        overlap=overlap == "yes" and tma,
        warp_specialize=warp_specialize == "yes" and tma,
        turns=turns == "yes" and warp_specialize == "yes" and tma,
        threshold=None if threshold is None else float(threshold),
        store_tma=store == "tma",
    )


def _keys(d: int, n: int, causal: bool) -> int:
    """Keys a step: 128, the tuner's best at d = 64 and at d = 128 (NOTES.md); 64 for a causal
    mask at d = 64 up to L = 1024, where a row tile sees few steps and its diagonal one, half
    of it masked, weighs most (1.09-1.14x flash there against 0.92-1.08x with 128)."""
    return 64 if causal and d <= 64 and n <= 1024 else 128


def _target(d: int) -> str:
    """Two blocks a multiprocessor at d = 64: 128 registers a thread (NOTES.md)."""
    return "cuda -min-blocks-per-sm=2" if d <= 64 else "cuda"


def _build_once(d: int, causal: bool) -> dict:
    """In a fresh process: the seconds of `sl.build` of the wgmma kernel at L = 4096, then
    of each of its steps with the compile cache cleared, and of ptxas on its PTX."""
    from benchmarks.build_phases import gpu_build_phases, ptxas_seconds
    from schedlang.codegen.nvptx.compile import clear_memory_cache

    b, h, n, d = shape(4096, d)
    tensors = gpu_attention.tensor_core_attention(b * h, n, d, "float16", causal)
    args = [*tensors[:3], tensors[-1]]
    start = time.perf_counter()
    ptx = sl.build(_wgmma(tensors, d, n, causal), args, target=f"{_target(d)} -arch=sm_90").ptx
    fresh = time.perf_counter() - start
    clear_memory_cache()
    schedule = _wgmma(tensors, d, n, causal)
    steps, again = gpu_build_phases(schedule, args, "sm_90", 2 if d <= 64 else 0)
    if again != ptx:
        raise SystemExit("the step-by-step build made other PTX than sl.build")
    return {"fresh": fresh, **steps, "ptxas": ptxas_seconds(ptx)}


def _report_build_time(args) -> None:
    causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    with tempfile.TemporaryDirectory() as bytecode:
        env = _fresh_process_env(bytecode)
        for d in map(int, args.head_dims.split(",")):
            for causal in causals:
                runs = [_build_process(d, causal, env) for _ in range(min(args.repeat, 5))]
                print(
                    f"wgmma build, d = {d}, {'causal' if causal else 'no mask'}, L = 4096 "
                    f"(median and least of {len(runs)}):"
                )
                for step in runs[0]:
                    seconds = sorted(r[step] for r in runs if r[step] is not None)
                    shown = (
                        f"{statistics.median(seconds):6.2f} s {seconds[0]:6.2f} s"
                        if seconds
                        else "(no ptxas)"
                    )
                    print(f"  {step}:".ljust(58) + shown)


def _fresh_process_env(bytecode: str) -> dict[str, str]:
    """The environment of a fresh build: the disk cache off, and Python's bytecode kept in
    `bytecode`, written by a first build that is not counted. Where PYTHONDONTWRITEBYTECODE
    is set (the CPU machine's), every process compiled the modules a build imports from their
    source, 0.3-0.5 s of each build measured, which an installed package does not pay."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(SCHEDLANG_CACHE_DIR="off", PYTHONPYCACHEPREFIX=bytecode)
    _build_process(64, False, env)
    return env


def _build_process(d: int, causal: bool, env: dict[str, str]) -> dict:
    """`_build_once` in a new process."""
    done = subprocess.run(
        [sys.executable, __file__, "--build-one", f"{d} {int(causal)}"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(done.stdout)


def _timed(s, tensors, q, k, v, causal: bool, repeat: int, target: str = "cuda") -> float:
    """Median seconds of schedule `s` over (b, h, n, d) `q`, `k`, `v`, after checking it
    against torch's math backend in float64."""
    b, h, n, d = q.shape
    kernel = sl.build(s, [*tensors[:3], tensors[-1]], target=target)
    flat = [x.reshape(b * h, n, d).contiguous() for x in (q, k, v)]
    out = torch.full_like(flat[0], float("nan"))
    kernel(*flat, out)
    # float64 scores of a few heads at a time: all of them at L = 16384 would take 68 GB
    heads = max(1, 2**32 // (8 * n * n))
    diff = top = 0.0
    with sdpa_kernel([SDPBackend.MATH]):
        for first in range(0, b * h, heads):
            part = slice(first, first + heads)
            want = torch.nn.functional.scaled_dot_product_attention(
                *(x[part].double() for x in flat), is_causal=causal
            )
            diff = max(diff, (out[part].double() - want).abs().max().item())
            top = max(top, want.abs().max().item())
    err = diff / top
    if not err <= 2e-2:
        raise SystemExit(f"schedlang attention {tuple(q.shape)}: max error {err:.2e}")
    return event_time(lambda: kernel(*flat, out), repeat)


if __name__ == "__main__":
    main()
