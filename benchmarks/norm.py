"""Layer norm and RMSNorm (`examples/gpu_norm.py`) against torch and the device copy, side by
side in one process, at tritonbench's shapes: M = 4096 rows, N = 1024 to 16384, float32,
bfloat16 and float16 inputs (statistics in float32), affine parameters in the input's dtype.

Peers: ``torch.nn.functional.layer_norm``; for RMSNorm the plain torch expression
``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w`` and, where torch has it,
``torch.nn.functional.rms_norm``; and the device copy of X into Y (``Y.copy_(X)``), which moves
the same bytes as a norm that reads X once and writes Y once. Rates are those bytes (X, Y and
the affine parameters) per second. Each of our kernels is checked against float64 first
(outputs filled with NaN), then timed at each shape of block (`--blocks`: threads per row,
times rows per block; the fastest is shown, all in the last column), cycling through enough
sets of buffers that none is in L2 from its previous use. ``--online`` adds the layer norm
whose statistics are one online pass (`gpu_norm.online_schedule`: several kernels, the scan's
steps launched by the host).

    python benchmarks/norm.py [--kinds layer_norm,rms_norm] [--dtypes float32,bfloat16]
        [--sizes 1024,4096] [--blocks auto|256,512,32x8] [--online] [--repeat 100]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import schedlang as sl  # noqa: E402
from benchmarks.gpu import check, event_time, rotated_kernel_time, rotation  # noqa: E402
from examples import gpu_norm  # noqa: E402
from schedlang.ir.dtype import itemsize  # noqa: E402

ROWS = 4096
EPS = {"layer_norm": 1e-5, "rms_norm": 1e-6}
RTOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}  # of the largest value
HEADER = [
    "kind",
    "dtype",
    "N",
    "block",
    "ms",
    "GB/s",
    "peer",
    "peer ms",
    "peer GB/s",
    "peer/ours",
    "copy GB/s",
    "ours/copy",
    "GB/s by block",
]


def blocks(n: int, dtype: str, asked: str) -> list[tuple[int, int]]:
    """The (threads per row, rows per block) to try: those asked (``256`` or ``32x8``), or
    (``auto``) one row a block of every power of two from 64 to 1024 threads, and 8 rows of 32
    and 4 of 64 threads, each where a thread makes 2 to 16 loads of 16 bytes a row."""
    if asked != "auto":
        return [tuple(map(int, f"{b}x1".split("x")[:2])) for b in asked.split(",")]
    loads = n // gpu_norm.lanes_of(dtype)
    shapes = [(t, 1) for t in (64, 128, 256, 512, 1024)] + [(32, 8), (64, 4)]
    return [(t, r) for t, r in shapes if 2 * t <= loads <= 16 * t] or [(64, 1)]


def inputs(kind: str, n: int, dtype: str) -> tuple[torch.Tensor, ...]:
    """X, the affine parameters and Y (NaN), on the GPU."""
    kinds = getattr(torch, dtype)
    x = torch.randn(ROWS, n, device="cuda").to(kinds) + 1.0
    params = [
        torch.randn(n, device="cuda").to(kinds) for _ in range(2 if kind == "layer_norm" else 1)
    ]
    return (x, *params, torch.full_like(x, float("nan")))


def expected(kind: str, x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
    """The norm in float64."""
    wide = [t.double() for t in (x, *params)]
    if kind == "layer_norm":
        return torch.nn.functional.layer_norm(wide[0], wide[0].shape[-1:], *wide[1:], EPS[kind])
    x, w = wide
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS[kind]) * w


def peers(kind: str) -> dict[str, object]:
    """torch's ways of computing `kind`, each taking (x, *params)."""
    eps = EPS[kind]
    if kind == "layer_norm":
        return {
            "F.layer_norm": lambda x, w, b: torch.nn.functional.layer_norm(
                x, x.shape[-1:], w, b, eps
            )
        }
    found = {
        "torch expression": lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    }
    if hasattr(torch.nn.functional, "rms_norm"):
        found["F.rms_norm"] = lambda x, w: torch.nn.functional.rms_norm(x, x.shape[-1:], w, eps)
    return found


def _call(fn, turns) -> torch.Tensor:
    *args, _ = next(turns)
    return fn(*args)


def _copy(turns) -> torch.Tensor:
    x, *_, y = next(turns)
    return y.copy_(x)


def ours(kind: str, n: int, dtype: str, sets, block: tuple[int, int], repeat: int) -> float:
    """Our kernel's median seconds, after checking it against float64."""
    threads, rows = block
    kernel = gpu_norm.build(kind, ROWS, n, dtype, threads=threads, rows=rows)
    return _checked_time(
        kernel, kind, dtype, f"{kind} {dtype} {n}, {threads}x{rows} threads", sets, repeat
    )


def online(n: int, dtype: str, sets, factor: int, repeat: int) -> float:
    """The one-pass layer norm's median seconds, after checking it against float64."""
    norm = gpu_norm.layer_norm(ROWS, n, dtype, eps=EPS["layer_norm"])
    kernel = sl.build(gpu_norm.online_schedule(norm, factor=factor), norm.args, target="cuda")
    what = f"online layer_norm {dtype} {n}"
    return _checked_time(kernel, "layer_norm", dtype, what, sets, repeat)


def _checked_time(kernel, kind: str, dtype: str, what: str, sets, repeat: int) -> float:
    arrays = sets[0]
    arrays[-1].fill_(float("nan"))
    kernel(*arrays)
    check(arrays[-1], expected(kind, *arrays[:-1]), what, RTOL[dtype])
    return rotated_kernel_time(kernel, sets, repeat)


def table_rows(kind: str, n: int, dtype: str, args) -> list[list[str]]:
    """One table row per peer of `kind` at `n` columns in `dtype`."""
    sets = rotation(partial(inputs, kind, n, dtype), 2 * ROWS * n * itemsize(dtype))
    work = sum(t.numel() * t.element_size() for t in sets[0])
    rate = lambda s: f"{work / s / 1e9:.0f}"  # noqa: E731
    copy = event_time(partial(_copy, itertools.cycle(sets)), args.repeat)
    tried = {
        f"{t}x{r}": ours(kind, n, dtype, sets, (t, r), args.repeat)
        for t, r in blocks(n, dtype, args.blocks)
    }
    best = min(tried, key=tried.get)
    variants = [(best, tried[best], " ".join(f"{b}:{rate(s)}" for b, s in tried.items()))]
    if args.online and kind == "layer_norm":
        variants.append(("online", online(n, dtype, sets, args.factor, args.repeat), "-"))
    table = []
    for name, fn in peers(kind).items():
        peer = event_time(partial(_call, fn, itertools.cycle(sets)), args.repeat)
        for block, seconds, spread in variants:
            table.append(
                [
                    kind,
                    dtype,
                    str(n),
                    block,
                    f"{seconds * 1e3:.4f}",
                    rate(seconds),
                    name,
                    f"{peer * 1e3:.4f}",
                    rate(peer),
                    f"{peer / seconds:.2f}x",
                    rate(copy),
                    f"{copy / seconds:.2f}",
                    spread,
                ]
            )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="layer_norm,rms_norm")
    parser.add_argument("--dtypes", default="float32,bfloat16,float16")
    parser.add_argument("--sizes", default="1024,2048,4096,8192,16384")
    parser.add_argument("--blocks", default="auto", help="threads per row [x rows] to try")
    parser.add_argument("--online", action="store_true", help="time the one-pass layer norm too")
    parser.add_argument("--factor", type=int, default=256, help="columns per block of online")
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, M = {ROWS}")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + " --- |" * len(HEADER))
    for kind, dtype, n in itertools.product(
        args.kinds.split(","), args.dtypes.split(","), map(int, args.sizes.split(","))
    ):
        for row in table_rows(kind, n, dtype, args):
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
