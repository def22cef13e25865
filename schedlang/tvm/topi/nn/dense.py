"""``topi.nn.matmul``, ``dense`` and ``dense_pack`` as TOPI writes them: ``T_matmul_<NN|NT|TN|TT>``
(tagged "dense" for data times transposed weights, the ``dense`` layout, else "matmul"), and
``T_dense_pack`` over weights packed in blocks of `bn` output columns, each with an optional
bias added in a compute tagged "broadcast"."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ..tag import BROADCAST
from ..utils import simplified


def _with_bias(mat, bias, out_dtype):
    if bias is None:
        return mat
    return _sl.compute(mat.shape, lambda i, j: mat[i, j] + bias[j].astype(out_dtype), tag=BROADCAST)


def matmul(
    tensor_a,
    tensor_b,
    bias=None,
    out_dtype=None,
    transpose_a=False,
    transpose_b=False,
    auto_scheduler_rewritten_layout="",
    meta_schedule_original_shape=None,
):
    if tensor_a.ndim != 2 or tensor_b.ndim != 2:
        raise AlgorithmError("matmul: both operands must be 2-D")
    out_dtype = out_dtype or tensor_a.dtype
    in_dim, batch = tensor_a.shape if transpose_a else tensor_a.shape[::-1]
    out_dim = tensor_b.shape[0] if transpose_b else tensor_b.shape[1]
    k = _sl.reduce_axis((0, in_dim), name="k")

    def value(i, j):
        left = tensor_a[k, i] if transpose_a else tensor_a[i, k]
        right = tensor_b[j, k] if transpose_b else tensor_b[k, j]
        return _sl.sum(left.astype(out_dtype) * right.astype(out_dtype), axis=k)

    form = ("T" if transpose_a else "N") + ("T" if transpose_b else "N")
    tag = "dense" if form == "NT" else "matmul"
    mat = _sl.compute((batch, out_dim), value, name=f"T_matmul_{form}", tag=tag)
    return _with_bias(mat, bias, out_dtype)


def dense(
    data,
    weight,
    bias=None,
    out_dtype=None,
    auto_scheduler_rewritten_layout="",
    meta_schedule_original_shape=None,
):
    """``data [batch, in_dim]`` times ``weight [out_dim, in_dim]`` transposed."""
    return matmul(data, weight, bias, out_dtype, False, True)


def dense_pack(data, weight, bias=None, out_dtype=None):
    """`dense` with weights packed as ``[out_dim // bn, in_dim, bn]``."""
    out_dtype = out_dtype or data.dtype
    rows, in_dim = data.shape
    blocks, _, bn = weight.shape
    k = _sl.reduce_axis((0, in_dim), name="k")
    packed = _sl.compute(
        simplified((rows, blocks * bn)),
        lambda y, x: _sl.sum(
            data[y, k].astype(out_dtype) * weight[x // bn, k, x % bn].astype(out_dtype), axis=k
        ),
        name="T_dense_pack",
        tag="dense_pack",
    )
    return _with_bias(packed, bias, out_dtype)
