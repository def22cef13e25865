"""Python's and numpy's own functions on expressions: those with a schedlang equivalent build
it, the others say what to write instead."""

from __future__ import annotations

import math

import numpy as np
import pytest

import schedlang as sl

from .util import random_array, rng

AlgorithmError = sl.AlgorithmError


def _built_matches(fcompute, reference, dtype="float32"):
    """A compute of `fcompute`, built for the CPU, gives `reference` of its random input."""
    n = 37
    A = sl.placeholder((n,), dtype, name="A")
    B = sl.compute((n,), lambda i: fcompute(A[i]), name="B")
    kernel = sl.build(sl.create_schedule(B), [A, B])
    a = random_array(rng(), n, dtype, low=0.5, high=4)
    a[::2] *= -1
    out = kernel(a)
    np.testing.assert_allclose(out, sl.evaluate(B, {A: a}), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(out, reference(a), rtol=2e-6, atol=1e-6)


def test_python_abs_is_sl_abs():
    A = sl.placeholder((4,), "int32", name="A")
    assert str(abs(A[0])) == str(sl.abs(A[0]))
    _built_matches(abs, np.abs)


@pytest.mark.parametrize(
    "ufunc, reference",
    [
        (np.exp, np.exp),
        (np.absolute, np.abs),
        (np.floor, np.floor),
        (lambda x: np.maximum(x, 1.0), lambda a: np.maximum(a, np.float32(1))),
        (lambda x: np.minimum(x, x * 2.0), lambda a: np.minimum(a, a * 2)),
        (lambda x: np.float32(3.0) * x - np.float32(1.5), lambda a: 3 * a - np.float32(1.5)),
        (lambda x: np.negative(x) / np.float32(2), lambda a: -a / 2),
    ],
)
def test_numpy_ufuncs_with_an_equivalent_build_it(ufunc, reference):
    _built_matches(ufunc, reference)


def test_numpy_integer_scalar_takes_the_expressions_dtype():
    A = sl.placeholder((4,), "int8", name="A")
    assert (np.int64(3) + A[0]).dtype == "int8"


def test_numpy_ufunc_without_an_equivalent():
    A = sl.placeholder((4,), name="A")
    with pytest.raises(AlgorithmError, match=r"numpy.arctan2 has no schedlang equivalent.*sl.exp"):
        np.arctan2(A[0], A[1])


def test_numpy_ufunc_with_keywords():
    A = sl.placeholder((4,), name="A")
    with pytest.raises(AlgorithmError, match=r"numpy.exp with out cannot build an expression"):
        np.exp(A[0], out=np.empty(()))
    with pytest.raises(AlgorithmError, match=r"numpy.add with the method .outer cannot"):
        np.add.outer(A[0], A[1])


@pytest.mark.parametrize("function", [max, min])
def test_python_max_and_min_point_to_sl_max(function):
    A = sl.placeholder((4,), name="A")
    with pytest.raises(AlgorithmError, match=r"Python's max\(\) and min\(\).*sl.max\(a, b\)"):
        function(A[0], 1.0)
    assert str(sl.max(A[0], 1.0)) == "max(A[0], 1.0)"


@pytest.mark.parametrize("function", [math.exp, math.sqrt, float])
def test_python_math_points_to_sl_functions(function):
    A = sl.placeholder((4,), name="A")
    with pytest.raises(AlgorithmError, match=r"'A\[0\]' is not a Python number.*sl.exp\(x\)"):
        function(A[0])


def test_python_int_of_an_expression_points_to_astype():
    A = sl.placeholder((4,), name="A")
    with pytest.raises(AlgorithmError, match=r"int\(\) of it was asked.*x.astype\('int32'\)"):
        int(A[0] + 1.0)


def test_code_that_catches_the_type_error_of_int_still_works():
    """Python raises TypeError for int() of what is no number; code relies on it."""
    n = sl.var("n")
    with pytest.raises(TypeError, match="'n' is not a Python number"):
        int(n)
