"""Helpers shared by the algorithm-layer tests: random inputs and one-line evaluation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import schedlang as sl
from schedlang.ir import dtype as dt

SEED = 20240611

# Relative tolerance when a float result is compared with numpy's, by dtype.
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-13}


def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def random_array(
    gen: np.random.Generator,
    shape: tuple[int, ...] | int,
    dtype: str = "float32",
    low: float = -4,
    high: float = 4,
    nonzero: bool = False,
) -> np.ndarray:
    """Random values in [low, high] (never all zeros); `nonzero` keeps every value away from 0."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if dtype == "bool":
        return gen.random(shape) < 0.5
    if dt.is_float(dtype):
        values = gen.uniform(low, high, shape)
        if nonzero:
            values = np.where(np.abs(values) < 0.25, np.copysign(0.5, values), values)
        return values.astype(dt.to_numpy(dtype))
    values = gen.integers(int(low), int(high), shape, endpoint=True)
    if nonzero:
        values = np.where(values == 0, 1, values)
    return values.astype(dt.to_numpy(dtype))


def elementwise(fcompute: Callable[..., object], *arrays: np.ndarray) -> np.ndarray:
    """Evaluate ``C[ix] = fcompute(T0[ix], T1[ix], ...)`` over arrays of one shape."""
    tensors = [sl.placeholder(a.shape, a.dtype, name=f"T{n}") for n, a in enumerate(arrays)]
    out = sl.compute(arrays[0].shape, lambda *ix: fcompute(*(t[ix] for t in tensors)), name="C")
    return sl.evaluate(out, dict(zip(tensors, arrays)))


def assert_matches(
    actual: np.ndarray,
    expected: np.ndarray,
    dtype: str | None = None,
    rtol: float | None = None,
) -> None:
    """`actual` has `expected`'s dtype (or `dtype`) and its values: exact for ints and bools,
    within the dtype's tolerance (or `rtol`, also taken as the absolute tolerance) for floats."""
    expected = np.asarray(expected)
    want = dt.to_numpy(dtype) if dtype is not None else expected.dtype
    assert actual.dtype == want, f"dtype {actual.dtype}, expected {want}"
    assert actual.shape == expected.shape
    name = np.dtype(want).name
    if dt.is_float(name):
        np.testing.assert_allclose(
            actual.astype(np.float64),
            expected.astype(np.float64),
            rtol=RTOL[name] if rtol is None else rtol,
            atol=RTOL[name] if rtol is None else rtol,
        )
    else:
        np.testing.assert_array_equal(actual, expected.astype(want))
