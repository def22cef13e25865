"""How the reference combines the terms of a reduction: pairwise where the order only changes
rounding, one term at a time where the dtype makes the order visible (`rounds_each_step`).

`step(lhs, rhs)` evaluates the reducer's combination on two arrays of partial results; the
evaluator supplies it, so that user reducers (argmax, `comm_reducer`) combine as written.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import dtype as dt
from .expr import Binary, CommReducer, Const

Step = Callable[[np.ndarray, np.ndarray], np.ndarray]
REDUCTIONS = {"+": np.sum, "*": np.prod, "max": np.max, "min": np.min}


def builtin_op(comb: CommReducer) -> str | None:
    """'+', '*', 'max' or 'min' if `comb` is that plain combination with its usual identity."""
    r = comb.result
    if not (isinstance(r, Binary) and r.op in REDUCTIONS):
        return None
    if not ({id(r.a), id(r.b)} == {id(comb.lhs), id(comb.rhs)}):
        return None
    if not isinstance(comb.identity, Const):  # one per element (`visit.by_element`)
        return None
    identity = comb.identity.value
    usual = {
        "+": 0,
        "*": 1,
        "max": dt.min_value(comb.dtype),
        "min": dt.max_value(comb.dtype),
    }[r.op]
    if r.op in ("max", "min") and dt.is_float(comb.dtype):
        infinite = float("-inf") if r.op == "max" else float("inf")
        return r.op if identity in (usual, infinite) else None
    return r.op if identity == usual else None


def rounds_each_step(dtype: np.dtype) -> bool:
    """Whether a reduction in `dtype` is evaluated one combination at a time, in order.

    A reduction accumulates in its dtype, as in TE (``sl.sum(A[i, k].astype("float32"), k)``
    asks for float32 accumulation of float16 data), and the loop nest of the unscheduled
    algorithm combines the terms one after another in the lexicographic order of the reduce
    axes, rounding after each. In float16 and bfloat16 the order is not rounding noise: a sum of
    4096 float16 ones stops at 2048, where 2048 + 1 rounds back to 2048, while numpy's own
    ``np.sum`` adds in float32 and pairwise and reaches 4096. So those dtypes are modelled
    exactly. float32 and float64 keep numpy's summation (pairwise, vectorised): it is faster
    and more accurate than a sequential loop, and a kernel's result differs from it by rounding
    only, which tests allow for; the same stagnation happens in float32 only past 2**24 terms
    of one size. Integers wrap the same in any order, and max and min are exact in any dtype."""
    return dtype.itemsize < 4 and dtype.kind not in "biu"


def fold_pairwise(step: Step, source, red_dims, identity) -> np.ndarray:
    """Combine along the reduce dimensions pairwise: log2(n) vectorised steps."""
    keep = source.shape[: red_dims[0]]
    values = np.ascontiguousarray(source).reshape(keep + (-1,))
    while values.shape[-1] > 1:
        if values.shape[-1] % 2:
            pad = np.broadcast_to(identity, keep + (1,))
            values = np.concatenate([values, pad], axis=-1)
        values = np.asarray(step(values[..., 0::2], values[..., 1::2]))
        values = values.astype(identity.dtype, copy=False)
    if values.shape[-1] == 0:
        return np.broadcast_to(identity, keep).copy()
    return values[..., 0]


_IN_ORDER = {"+": np.add, "*": np.multiply}
_ACCUMULATE_BELOW = 64  # outputs under which np.ufunc.accumulate beats a loop over the terms


def fold_in_order(comb: CommReducer, step: Step, source, red_dims, identity) -> np.ndarray:
    """Combine along the reduce dimensions one term at a time in their row-major order (see
    `rounds_each_step`), each step in the dtype. Vectorised over the outputs: a loop over the
    terms with numpy operations on all outputs at once, or for few outputs and many terms
    ``accumulate``, which also rounds every partial result."""
    keep = source.shape[: red_dims[0]]
    terms = source.reshape(keep + (-1,))
    total = np.broadcast_to(identity, keep).copy()
    ufunc = _IN_ORDER.get(builtin_op(comb))
    if dt.is_float8(identity.dtype.name):
        ufunc = None  # ml_dtypes' 8-bit sums overflow to NaN where `step` saturates
    if ufunc is not None and total.size < _ACCUMULATE_BELOW:
        if terms.shape[-1]:
            total = ufunc(total, ufunc.accumulate(terms, axis=-1, dtype=identity.dtype)[..., -1])
        return total
    for term in np.ascontiguousarray(np.moveaxis(terms, -1, 0)):
        if ufunc is not None:
            ufunc(total, term, out=total)
            continue
        total = np.asarray(step(total, term)).astype(identity.dtype, copy=False)
    return total
