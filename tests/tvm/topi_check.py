"""Checking TOPI's operators as TE programs use them: build a schedule (TE's default one
unless given) over the inputs and outputs, run it on random inputs with outputs poisoned with
NaN (or a sentinel for integers), and compare with numpy."""

from __future__ import annotations

import numpy as np

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.tvm import te
from schedlang.tvm.topi.utils import get_const_tuple


def random(shape, dtype="float32", low=-1.0, high=1.0, seed=0):
    """Random data of `shape` (never zeros): uniform floats, or integers in [low, high)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def poisoned(tensor):
    shape = get_const_tuple(tensor.shape)
    kind = np.dtype(tensor.dtype).kind
    fill = np.nan if kind == "f" else (True if kind == "b" else -7)
    return np.full(shape, fill, tensor.dtype)


def run(outputs, inputs, arrays, schedule=None):
    """The outputs (a tensor or a list) computed from `arrays` (one per input)."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    s = schedule if schedule is not None else te.create_schedule([t.op for t in outputs])
    kernel = tvm.build(s, list(inputs) + list(outputs), "llvm")
    results = [poisoned(t) for t in outputs]
    kernel(*arrays, *results)
    return results


def check(outputs, inputs, arrays, expected, schedule=None, rtol=1e-5, atol=1e-5):
    """`run`, then each result compared with `expected` (an array or a list, one per output)."""
    results = run(outputs, inputs, arrays, schedule)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_definition(output, inputs, arrays, expected, rtol=1e-5, atol=1e-5):
    """The value of `output` by schedlang's numpy reference (its definition, no schedule)
    compared with `expected`: for operators whose kernels schedlang cannot build yet."""
    got = sl.evaluate(output, dict(zip(inputs, arrays)))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
