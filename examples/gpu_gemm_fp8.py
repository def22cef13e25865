"""An 8-bit float GEMM on Hopper's warpgroup tensor cores (``wgmma ... k32 .e4m3/.e5m2``, sm_90a).

The algorithm is the one Transformer Engine's users write: A (m x k) and B (n x k) of
``float8_e4m3fn`` or ``float8_e5m2`` (either for each), each element converted exactly to
float32 and the products summed in float32, ``C[i, j] = sum(A[i, k] * B[j, k])``. B is stored
n x k, as torch's ``_scaled_mm(a, b.t())`` takes it: the tensor cores read 8-bit operands
only with K contiguous (K-major), so the schedule refuses a B stored k x n. C is float32, or
the sum converted to ``out_dtype`` (bfloat16, float16) on its way out.

The schedule is `gpu_gemm_wgmma`'s: a warpgroup's instruction multiplies a 64 x n x 32 tile
(32 bytes of K a row, as 16 halves are), so the k step is 128 (a 128-byte row of the
swizzled tiles) and each thread copies 16 elements (16 bytes) at once.

How the tensor cores add: the products of 8-bit floats are exact in float32, but Hopper sums
each instruction's 32 products into the accumulator with fewer mantissa bits than float32
(docs/primitives/tensorize.md, "8-bit floats"), so results differ from a float32 sum by a few
units of about 2^-13 of the sum's magnitude, which the tests allow for.
"""

from __future__ import annotations

import schedlang as sl
from examples import gpu_gemm_wgmma

__all__ = ["FAST", "build", "gemm", "scaled_gemm", "schedule"]

STEP = 128  # k per step: a 128-byte row of 8-bit floats
# gpu_gemm_wgmma's fastest options (128 x 256 blocks, 4 stages, TMA loads and stores): a step
# of 128 8-bit floats is the same 48 KB of tiles as the float16 GEMM's step of 64 halves
FAST = dict(gpu_gemm_wgmma.FAST)


def gemm(
    m, n, k, dtype: str = "float8_e4m3fn", out_dtype: str = "float32", b_dtype: str | None = None
) -> tuple[sl.Tensor, sl.Tensor, sl.Tensor]:
    """``(A, B, C)``: C (m x n) = A (m x k) @ B (n x k)^T, A of `dtype`, B of `b_dtype`
    (default `dtype`), summed in float32 and stored as `out_dtype`."""
    a, b, acc = _product(m, n, k, dtype, b_dtype, "C" if out_dtype == "float32" else "acc")
    if out_dtype == "float32":
        return a, b, acc
    return a, b, sl.compute((m, n), lambda i, j: acc[i, j].astype(out_dtype), name="C")


def scaled_gemm(
    m, n, k, dtype: str = "float8_e4m3fn", out_dtype: str = "bfloat16", per: str = "tensor"
) -> tuple[sl.Tensor, ...]:
    """``(A, B, SA, SB, C)``: the quantised GEMM as Transformer Engine writes it, ``C = (A @
    B^T) * SA * SB`` in `out_dtype`, the scales float32 per tensor (`per` "tensor": SA and SB
    of one element) or per row of A and column of C (`per` "row": SA m long, SB n long). The
    schedule scales the accumulator in registers, each thread its own elements, on the way to
    ``store_matrix``."""
    a, b, acc = _product(m, n, k, dtype, None, "acc")
    rows = per == "row"
    sa = sl.placeholder((m,) if rows else (1,), "float32", name="SA")
    sb = sl.placeholder((n,) if rows else (1,), "float32", name="SB")

    def scaled(i, j):
        return (acc[i, j] * sa[i if rows else 0] * sb[j if rows else 0]).astype(out_dtype)

    return a, b, sa, sb, sl.compute((m, n), scaled, name="C")


def _product(m, n, k, dtype: str, b_dtype: str | None, name: str):
    a = sl.placeholder((m, k), dtype, name="A")
    b = sl.placeholder((n, k), b_dtype or dtype, name="B")
    r = sl.reduce_axis((0, k), name="k")
    acc = sl.compute(
        (m, n),
        lambda i, j: sl.sum(a[i, r].astype("float32") * b[j, r].astype("float32"), axis=r),
        name=name,
    )
    return a, b, acc


def schedule(a: sl.Tensor, b: sl.Tensor, c: sl.Tensor, step: int = STEP, **options) -> sl.Schedule:
    """`gpu_gemm_wgmma.schedule` with k in steps of `step` (a multiple of 128) and its other
    `options` (block_rows, block_cols, stages, tma, group, persistent, tma_store)."""
    return gpu_gemm_wgmma.schedule(a, b, c, step=step, **options)


def build(
    m,
    n,
    k,
    dtype: str = "float8_e4m3fn",
    out_dtype: str = "float32",
    b_dtype: str | None = None,
    target: str = "cuda",
    **options,
):
    """The GEMM built for `target` (a Hopper GPU: sm_90a)."""
    a, b, c = gemm(m, n, k, dtype, out_dtype, b_dtype)
    return sl.build(schedule(a, b, c, **options), [a, b, c], target=target)
