"""Reads at data-dependent indices (``data[idx[i]]``, ``A[(scale * i).astype("int32")]``).

The polyhedral layer describes an index exactly when it is quasi-affine in the loop variables
and sizes: sums, multiples by a constant, ``//`` and ``%`` by a constant, ``min`` and ``max``.
Any other index (it reads a tensor, goes through float math, multiplies two variables) may take
any value, so nothing can be proven about it: such a read is kept inside its tensor by clamping
its index to ``[0, extent - 1]`` (TOPI's ``take`` mode "clip"). The reference, the loop-IR
interpreter and both code generators read the clamped element, because the lowering rewrites
the bodies with `clamp_data_reads` and the reference applies the same rule to each read.
"""

from __future__ import annotations

from . import dtype as dt
from .exact import exact_int
from .expr import Binary, Cast, Const, Expr, Read, Unary, Var, binary, const
from .visit import transform


def _constant(e: Expr) -> int | None:
    """The value of `e` when it is integer arithmetic of constants only, else None."""
    value = exact_int(e, {})
    return None if value is None else value([])


def is_data_dependent(index: Expr) -> bool:
    """True when `index` is not a quasi-affine function of variables and constants: its
    value can be anything, and a read at it is clamped into its tensor."""
    if isinstance(index, (Const, Var)):
        return not dt.is_int(index.dtype)
    if isinstance(index, Cast):
        return not (dt.is_int(index.dtype) and dt.is_int(index.value.dtype)) or is_data_dependent(
            index.value
        )
    if isinstance(index, Unary):
        return index.op != "-" or is_data_dependent(index.a)
    if not isinstance(index, Binary):
        return True
    if index.op in ("+", "-", "min", "max"):
        return is_data_dependent(index.a) or is_data_dependent(index.b)
    if index.op == "*":
        if _constant(index.a) is None and _constant(index.b) is None:
            return True
        return is_data_dependent(index.a) or is_data_dependent(index.b)
    if index.op in ("//", "%"):
        return not _constant(index.b) or is_data_dependent(index.a)
    return True


def clamp_index(index: Expr, extent: Expr) -> Expr:
    """`index` kept in ``[0, extent - 1]``."""
    last = binary("-", extent, 1)
    value = _constant(last)
    top = last if value is None else const(value, last.dtype)
    return binary("max", binary("min", index, top), 0)


def clamp_data_reads(body: Expr) -> Expr:
    """`body` with the data-dependent index of every read clamped into its tensor."""

    def clamp(e: Expr) -> Expr | None:
        if not isinstance(e, Read) or not any(is_data_dependent(i) for i in e.indices):
            return None
        clamped = tuple(
            clamp_index(i, n) if is_data_dependent(i) else i
            for i, n in zip(e.indices, e.tensor.shape)
        )
        return Read(e.tensor, clamped, e.dtype)

    return transform(body, clamp)
