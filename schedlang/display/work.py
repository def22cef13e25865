"""How much work an algorithm asks for, independent of any schedule: the numerator of
GFLOP/s and GB/s.

Floating-point operations are counted from the definition, once per point of each compute's
domain: every float ``+ - * /``, ``min``/``max``, negation and math call in the body (``fma``
counts two); a reduction adds one combine per reduced point, so ``sum(A[i, k] * B[k, j])``
is the two operations per multiply-add that BLAS counts. Index arithmetic, comparisons,
selects and casts are not counted. A schedule that recomputes (inlining into several readers,
overlapping tiles) does more than this; the count is what the algorithm needs, as rates in
papers are.

Bytes are the compulsory traffic: each argument read or written once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..ir import dtype as dt
from ..ir.expr import Binary, Call, Expr, Reduce, Unary, Var
from ..ir.graph import post_order
from ..ir.tensor import ComputeOp, Operation
from ..ir.visit import walk
from .sizes import shape_of

_FLOAT_OPS = ("+", "-", "*", "/", "min", "max")


def count_flops(outputs: Iterable[Operation], sizes: Mapping[Var, int]) -> int:
    """Floating-point operations to compute `outputs` from their inputs at `sizes`."""
    total = 0
    for op in post_order(outputs):
        if not isinstance(op, ComputeOp):
            continue
        points = _count(shape_of(op.shape, sizes))
        body = op.expr
        if isinstance(body, Reduce):
            reduced = _count(shape_of((iv.dom.extent for iv in body.axis), sizes))
            total += points * reduced * (_ops(body.source) + 1)
        else:
            total += points * _ops(body)
    return total


def _ops(e: Expr) -> int:
    n = 0
    for node in walk(e):
        if not dt.is_float(node.dtype):
            continue
        if isinstance(node, Binary) and node.op in _FLOAT_OPS:
            n += 1
        elif isinstance(node, Unary) and node.op == "-":
            n += 1
        elif isinstance(node, Call):
            n += 2 if node.name == "fma" else 1
    return n


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for extent in shape:
        n *= max(extent, 0)
    return n
