"""The data a kernel is checked on: random inputs away from zero, outputs filled with NaN,
and how far a result may be from the reference evaluator's.

Shared by `sl.compare` and the tuner, which check every kernel they time the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes
from ..ir.expr import Var
from ..ir.tensor import Tensor
from ..platform_info import usable_cores
from .sizes import bind_sizes, shape_of

# Relative tolerance per dtype, also scaled to the largest reference value as an absolute one:
# a schedule may reorder a reduction, which changes rounding but not much more.
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}
TOLERANCE.update({"float8_e4m3fn": 0.125, "float8_e5m2": 0.25})  # one step of their mantissas


def check_inputs(placeholders, arg_ops, inputs, sizes, seed, caller: str = "compare"):
    """Arrays for the placeholders and the value of every size; errors name `caller`."""
    shapes = [op.shape for op in arg_ops]
    if inputs is None:
        bound = bind_sizes(shapes, sizes or {}, caller)
        rng = np.random.default_rng(seed)
        arrays = {
            Tensor(op): random_array(shape_of(op.shape, bound), op.dtype, rng)
            for op in placeholders
        }
        return arrays, bound
    given = bind_sizes(shapes, sizes or {}, caller, complete=False)
    by_op = {(t.op if isinstance(t, Tensor) else t): np.asarray(a) for t, a in inputs.items()}
    missing = [op.name for op in placeholders if op not in by_op]
    if missing:
        raise ValueError(f"{caller}: inputs has no array for {', '.join(missing)}")
    arrays = {op: by_op[op] for op in placeholders}
    bound = _bind_sizes(arg_ops, arrays, given)
    return {Tensor(op): a for op, a in arrays.items()}, bound


def random_array(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Values away from zero (so a missed update or a wrong operand shows), of either sign."""
    np_dtype = dt.to_numpy(dtype)
    if dt.is_float(dtype):
        wide = np.float64 if dtype == "float64" else np.float32
        count = int(np.prod(shape, dtype=np.int64))
        if count < 2 * _CHUNK:
            values = rng.random(shape, dtype=wide)
            _away_from_zero(values)
            return values.astype(np_dtype, copy=False)
        # a large array in chunks of their own seeds, drawn on threads (numpy lets go of the
        # interpreter while it fills): a tuner's two 4096x4096 inputs took 0.3 s in one draw
        # on a 16-core machine, the start of every run. The chunks depend on the size alone,
        # so the values are the same on any machine.
        values = np.empty(count, wide)
        parts = [values[k : k + _CHUNK] for k in range(0, count, _CHUNK)]
        seeds = rng.integers(2**63, size=len(parts))
        with ThreadPoolExecutor(max(1, min(usable_cores(), len(parts)))) as pool:
            list(pool.map(_fill, seeds, parts))
        return values.reshape(shape).astype(np_dtype, copy=False)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(1, 8, size=shape).astype(np_dtype)


_CHUNK = 1 << 18  # elements drawn from one seed in a large array


def _fill(seed, part: np.ndarray) -> None:
    np.random.default_rng(seed).random(out=part, dtype=part.dtype)
    _away_from_zero(part)


def _away_from_zero(values: np.ndarray) -> None:
    """Uniform draws in [0, 1) moved, in place, to [-1.5, -0.5) and [0.5, 1.5): one draw
    instead of a sign and a magnitude apart (a tenth of the time)."""
    values *= 2.0
    values -= 1.0
    values += np.copysign(values.dtype.type(0.5), values)


def call_arrays(arg_ops, arrays, bound) -> list[np.ndarray]:
    """The call's arrays: inputs as given, outputs freshly filled with NaN (or, for integers,
    a value no correct kernel leaves behind by chance)."""
    from ..runtime.arrays import aligned_copy, aligned_empty

    by_op = {t.op: a for t, a in arrays.items()}
    call = []
    for op in arg_ops:
        if op in by_op:
            call.append(aligned_copy(by_op[op]))
            continue
        out = aligned_empty(shape_of(op.shape, bound), op.dtype)
        out[...] = np.nan if dt.is_float(op.dtype) else np.array(-123456789).astype(out.dtype)
        call.append(out)
    return call


def hidden_sizes(func, bound: Mapping[Var, int]) -> dict[str, int]:
    """The sizes no argument's shape shows, which a kernel takes by name."""
    from .sizes import size_vars

    shown = size_vars(b.shape for b in func.params)
    return {v.name: n for v, n in bound.items() if v.name not in shown and v in func.sizes}


def relative_error(got: np.ndarray, want: np.ndarray, scale=None, scratch=None) -> float:
    """The largest difference relative to the largest reference value (inf for NaN); bools
    compared byte by byte (a poisoned byte is neither 0 nor 1). A caller checking many
    results against one reference passes its `scale` and a `scratch` array of its shape (float32
    for float32 and narrower outputs): then nothing is allocated per check."""
    if got.dtype == np.bool_:
        return float(np.count_nonzero(got.view(np.uint8) != want.view(np.uint8)))
    if scale is None:
        scale = max(float(np.abs(want.astype(np.float64)).max(initial=0.0)), 1.0)
    if scratch is None:
        scratch = np.empty(got.shape, np.float64)
    np.subtract(got, want, out=scratch, dtype=scratch.dtype)
    np.abs(scratch, out=scratch)
    largest = float(scratch.max(initial=0.0))
    return float("inf") if np.isnan(largest) else largest / scale
