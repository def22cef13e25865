"""The weight-only int4 GEMM (`examples/gpu_gemm_int4.py`) against torch in one process, at
Llama-2-70B's projections (k x n = 8192 x 10240 and 28672 x 8192, groups of 128 rows, or 32) for
decoding (m = 1 and 16) and prefill (m = 2048), bfloat16 activations.

Decoding (m <= 16) uses the fastest at the shape of the options `decode_options` gives
(each is built and timed): `decode_schedule` on the CUDA cores, `register_decode_schedule`
(the weight as wgmma's A operand in registers; "bytes by thread": Wq passed in the threads' order,
`bytes_by_thread_order`, made once per weight as tinygemm's own packing is) and, at m = 16,
`tensor_core_decode_schedule` (the wgmma ones built for m a size variable); the column gives
the slice of k and the columns a thread or a block.
Prefill: the faster of `schedule` with `PREFILL`'s tiles (CUDA cores) and
`tensor_core_schedule` (wgmma).

Two times a call: "call" waits for each call before the next (the caller's launch counted:
what one decoding step sees), "GPU" is tritonbench's method (``triton.testing.do_bench``: L2
flushed before each call, the calls queued, so the launch hides behind the flush). Ratios are
given for both.

Peers: ``torch._weight_int4pack_mm`` (torch's tinygemm kernel, its own packing of the same
shapes; "-" where this torch has none for the GPU) and the bfloat16 cuBLAS GEMM of the
dequantised weight (``torch.mm``), which reads four times the weight's bytes. Our kernel is
checked first against torch's GEMM of the weight `dequantize` gives (output filled with NaN).

    python benchmarks/int4_gemm.py [--ms 1,16,2048] [--repeat 50]

``--ms 1,2,4,8,16`` covers decoding's range (`decode_options` between 1 and 16).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

import schedlang as sl  # noqa: E402
from benchmarks.gpu import event_time  # noqa: E402
from examples import gpu_gemm_int4  # noqa: E402

SHAPES = [(8192, 10240), (28672, 8192)]  # (k, n)
GROUP = 128  # rows of k a scale and a zero cover (`--group` sets it)
SLICES = (512, 1024)  # 1024: half the partial sums, 1.06x at 28672 x 8192 (NOTES.md)
# the decoding schedules' options tried by m, the fastest kept (measured choices: slices of k
# a block, columns a thread or a block, rows a block)
DECODE = {
    1: [dict(decode=True, slice_k=s, cols=4, warps=8, unroll=4) for s in (64, 128)]
    + [dict(registers=True, slice_k=512, rows=8, bytes_by_thread=True, step=128)],
    16: [dict(decode=True, slice_k=128, cols=8, warps=4, unroll=2)]
    + [dict(tensor_cores=True, slice_k=512, block_cols=128, stages=2)]
    + [dict(registers=True, slice_k=512, rows=16, step=128, bytes_by_thread=False)]
    + [dict(registers=True, slice_k=s, rows=16, step=128, bytes_by_thread=True) for s in SLICES],
}
PREFILL = dict(block_rows=128, block_cols=128, threads_y=16, threads_x=16, step=16)


def decode_options(m: int) -> list[dict]:
    """The decoding schedules tried at `m` rows: `DECODE`'s at m = 1 and 16 (the measured
    choices), between them the CUDA-core kernel with all m rows a thread (fewer columns a
    thread as m grows: each weight is multiplied into m rows) and the register kernel with
    wgmma's 8 or 16 rows."""
    if m in DECODE:
        return DECODE[m]
    cuda_cores = dict(decode=True, slice_k=128, cols=4 if m <= 4 else 8, warps=8 if m <= 4 else 4)
    registers = dict(registers=True, rows=8 if m <= 8 else 16, step=128, bytes_by_thread=True)
    return [{**cuda_cores, "unroll": 4 if m <= 4 else 2}] + [
        {**registers, "slice_k": s} for s in SLICES
    ]


def tinygemm(x: torch.Tensor, k: int, n: int, group: int = GROUP):
    """A call of torch's int4 kernel on a random weight of the shape, or None."""
    try:
        q = torch.randint(0, 16, (n, k), dtype=torch.int32, device="cuda")
        packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), 8)
        scales = torch.rand(k // group, n, 2, dtype=torch.bfloat16, device="cuda")
        call = lambda: torch._weight_int4pack_mm(x, packed, group, scales)  # noqa: E731
        call()
        return call
    except (RuntimeError, AttributeError, TypeError):
        return None


def row(m: int, k: int, n: int, repeat: int, group: int = GROUP) -> str:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((k, n)).astype(np.float32)
    packed, scales, zeros = gpu_gemm_int4.pack_int4(weight, group, "bfloat16")
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    dense = torch.from_numpy(gpu_gemm_int4.dequantize(packed, scales, zeros).astype(np.float32))
    dense = dense.to("cuda", torch.bfloat16)
    wq = torch.from_numpy(packed).cuda()
    options = decode_options(m) if m <= 16 else [PREFILL, dict(tensor_cores=True)]
    by_thread = None  # Wq in the threads' order, made once a row where an option asks for it
    if any(option.get("bytes_by_thread") for option in options):
        by_thread = torch.from_numpy(gpu_gemm_int4.bytes_by_thread_order(packed)).cuda()
    sc = torch.from_numpy(scales.astype(np.float32)).to("cuda", torch.bfloat16)
    ze = torch.from_numpy(zeros.astype(np.float32)).to("cuda", torch.bfloat16)
    want = (a.float() @ dense.float()).to(torch.bfloat16)
    timed = []
    for option in options:
        tiles = option.get("registers") or (option.get("tensor_cores") and "slice_k" in option)
        rows = sl.var("m") if tiles else m  # any m below a tile
        kernel = gpu_gemm_int4.build(rows, n, k, group, "bfloat16", **dict(option))
        c = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        w = by_thread if option.get("bytes_by_thread") else wq
        kernel(a, w, sc, ze, c)
        error = (c.float() - want.float()).abs().max().item() / want.float().abs().max().item()
        assert error < 2e-2, f"m={m} k={k} n={n} {option}: relative error {error}"
        seconds = times(lambda: kernel(a, w, sc, ze, c), repeat)  # noqa: B023
        how = "wgmma" if option.get("tensor_cores") else "CUDA cores"
        how = "wgmma, W in registers" if option.get("registers") else how
        how += ", bytes by thread" if option.get("bytes_by_thread") else ""
        if "slice_k" in option:
            columns = option.get("cols", option.get("block_cols", 64))
            how += f" {option['slice_k']} / {columns}"
        timed.append((seconds, how))
    ours, how = min(timed)
    cublas = times(lambda: torch.mm(a, dense), repeat)
    tiny = tinygemm(a, k, n, group)
    theirs = times(tiny, repeat) if tiny is not None else None
    bytes_moved = k * n / 2 + m * k * 2 + m * n * 2
    cells = [m, k, n, how, _us(ours), f"{bytes_moved / ours[1] / 1e9:.0f}", _us(cublas)]
    cells += ["-" if theirs is None else _us(theirs), _ratios(cublas, ours)]
    cells.append("-" if theirs is None else _ratios(theirs, ours))
    return "| " + " | ".join(map(str, cells)) + " |"


def times(call, repeat: int) -> tuple[float, float]:
    """Seconds of `call`: (each call waited for, tritonbench's queued calls after a flush)."""
    return event_time(call, repeat), do_bench(call, return_mode="median") / 1e3


def _us(pair: tuple[float, float]) -> str:
    return " / ".join(f"{t * 1e6:.1f}" for t in pair)


def _ratios(peer: tuple[float, float], ours: tuple[float, float]) -> str:
    return " / ".join(f"{p / o:.2f}x" for p, o in zip(peer, ours))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", default="1,16,2048")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--group", type=int, default=GROUP, help="rows a scale covers (32, 128)")
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, group {args.group}")
    print(
        "| m | k | n | slice of k / columns, or schedule | schedlang us (call / GPU) | "
        "schedlang GB/s (GPU) | "
        "cuBLAS bf16 us | tinygemm us | cuBLAS / schedlang | tinygemm / schedlang |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in (int(x) for x in args.ms.split(",")):
        for k, n in SHAPES:
            print(row(m, k, n, args.repeat, args.group), flush=True)


if __name__ == "__main__":
    main()
