"""A reference interpreter for lowered functions: the backend-independent oracle.

`run` executes a `LoweredFunc` on numpy arrays, in place, with exactly the numerics of the
reference evaluator (`schedlang.ir.evaluate`): every operation is the same numpy operation on
the same dtypes, so int32 wraps, ``//``/``%`` floor, float->int casts saturate, float16,
bfloat16 and 8-bit float math runs in float32 and rounds (8-bit floats saturating), and
``select`` evaluates only the branch it takes.

Speed comes from compiling, not walking: the loop nest is translated once into Python source
(loops become ``for`` loops over numpy scalars, expressions numpy expressions) and ``exec``-ed,
then cached per function. Loops bound to ``threadIdx.*`` run SIMT-style: every value inside may
be an array over the threads of a block and statements run under a mask of active threads; the
runtime (`interpret.runtime`) checks barriers for divergence and shared memory for races. All
other loops (``blockIdx.*`` included) run sequentially, in program order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...errors import InternalError, SchedlangError
from ...ir import dtype as dt
from ...ir.evaluate import _bind_sizes
from ...ir.expr import Var
from ..core.nodes import LoweredFunc
from ..core.scan_rows import ScanRowChecks
from .compile import compile_func
from .runtime import DivergentBarrierError, RaceError, Runtime

__all__ = ["DivergentBarrierError", "RaceError", "run"]

_CACHE_LIMIT = 128
_cache: dict[int, tuple[LoweredFunc, object]] = {}


def run(
    func: LoweredFunc,
    arrays: Sequence[np.ndarray],
    sizes: Mapping[Var, int] | None = None,
) -> None:
    """Execute `func` on `arrays` (one per parameter, in order), writing outputs in place.

    Symbolic sizes are read off the arrays' shapes (a dimension that is an expression is
    evaluated and checked); pass `sizes` for those no array shows. Raises `ValueError` or
    `TypeError` for arrays that do not fit the parameters, `RaceError` for a data race on
    shared memory (or two threads storing to one element at once), `DivergentBarrierError`
    for a barrier that only some threads of a block reach, and `InternalError` for malformed
    IR such as an out-of-bounds access or a tensor-core `MatrixOp` that only part of a warp
    runs (`interpret.matrix`). Asynchronous copies (`interpret.asynccopy`) land only at their
    thread's `AsyncWait`: touching an element a copy is still writing is a `RaceError`, and a
    copy never waited for by the end of its block an `InternalError`.
    """
    if len(arrays) != len(func.params):
        raise ValueError(
            f"'{func.name}' takes {len(func.params)} arrays "
            f"({', '.join(b.name for b in func.params)}), got {len(arrays)}"
        )
    for buffer, array in zip(func.params, arrays):
        _check_array(buffer, array)
    bound = _bind_sizes(list(func.params), dict(zip(func.params, arrays)), sizes or {})
    compiled = _compiled(func)
    values = []
    for v in compiled.free_vars:
        if v not in bound:
            raise ValueError(
                f"size '{v.name}' is used by '{func.name}' but no parameter's shape shows it; "
                f"pass it as sizes={{{v.name}: value}}"
            )
        values.append(np.array(bound[v], dtype=dt.to_numpy(v.dtype))[()])
    if func.scan_rows:
        ScanRowChecks(func).check([bound.get(v, 0) for v in func.sizes])  # theirs are bound
    runtime = Runtime(compiled.threaded)
    try:
        with np.errstate(all="ignore"):
            compiled.kernel(runtime, list(arrays), values)
    except (SchedlangError, IndexError) as err:
        raise _located(err, func, compiled) from None


def _located(err: Exception, func: LoweredFunc, compiled) -> Exception:
    """`err` with the loop-IR statement that raised it appended to its message."""
    line, tb = 0, err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == compiled.filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    where = compiled.origin(line)
    suffix = f"\n  in '{func.name}' at: {where}" if where else ""
    if isinstance(err, IndexError):
        return InternalError(f"out-of-bounds access: {err}{suffix}")
    return type(err)(f"{err}{suffix}")


def _check_array(buffer, array) -> None:
    if not isinstance(array, np.ndarray):
        raise TypeError(
            f"parameter '{buffer.name}' needs a numpy array (written in place), "
            f"got {type(array).__name__}"
        )
    expected = dt.to_numpy(buffer.dtype)
    if array.dtype != expected:
        raise TypeError(
            f"parameter '{buffer.name}' is {buffer.dtype} but its array is {array.dtype}: "
            f"convert it with .astype({expected.name!r})"
        )
    if array.ndim != len(buffer.shape):
        raise ValueError(
            f"parameter '{buffer.name}' has {len(buffer.shape)} dimension(s) but its array has "
            f"shape {array.shape}"
        )


def _compiled(func: LoweredFunc):
    hit = _cache.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    compiled = compile_func(func)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.pop(next(iter(_cache)))
    _cache[id(func)] = (func, compiled)
    return compiled


def source(func: LoweredFunc) -> str:
    """The Python source `run` executes for `func` (for debugging the interpreter)."""
    return _compiled(func).source
