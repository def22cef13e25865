"""``topi.nn.batch_matmul``: one matrix product per batch (``T_batch_matmul_<NN|NT|TN|TT>``,
tagged "batch_matmul"); an operand with a batch of 1 is shared by every batch."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ..utils import const_value


def batch_matmul(
    tensor_a,
    tensor_b,
    oshape=None,
    out_dtype=None,
    transpose_a=False,
    transpose_b=True,
    auto_scheduler_rewritten_layout="",
    meta_schedule_original_shape=None,
):
    if tensor_a.ndim != 3 or tensor_b.ndim != 3:
        raise AlgorithmError("batch_matmul: both operands must be 3-D")
    batch_a, batch_b = const_value(tensor_a.shape[0]), const_value(tensor_b.shape[0])
    if batch_a != batch_b and 1 not in (batch_a, batch_b):
        raise AlgorithmError(
            f"batch_matmul: batches {tensor_a.shape[0]} and {tensor_b.shape[0]} do not match"
        )
    rows = tensor_a.shape[2] if transpose_a else tensor_a.shape[1]
    red = tensor_a.shape[1] if transpose_a else tensor_a.shape[2]
    cols = tensor_b.shape[1] if transpose_b else tensor_b.shape[2]
    out_dtype = out_dtype or tensor_a.dtype
    if oshape is None:
        batch = tensor_b.shape[0] if batch_a == 1 else tensor_a.shape[0]
        oshape = (batch, rows, cols)
    k = _sl.reduce_axis((0, red), name="k")

    def value(b, i, j):
        ba = 0 if batch_a == 1 else b
        bb = 0 if batch_b == 1 else b
        left = tensor_a[ba, k, i] if transpose_a else tensor_a[ba, i, k]
        right = tensor_b[bb, j, k] if transpose_b else tensor_b[bb, k, j]
        return _sl.sum(left.astype(out_dtype) * right.astype(out_dtype), axis=k)

    form = ("T" if transpose_a else "N") + ("T" if transpose_b else "N")
    return _sl.compute(tuple(oshape), value, name=f"T_batch_matmul_{form}", tag="batch_matmul")
