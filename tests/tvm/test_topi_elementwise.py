"""TOPI's element-wise and broadcasting operators on schedlang: names, tags and values against
numpy, at odd shapes, under TE's default schedule."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, random


def _a():
    return te.placeholder((3, 5, 7), name="A"), random((3, 5, 7))


@pytest.mark.parametrize(
    "op, ref",
    [
        (topi.exp, np.exp),
        (topi.tanh, np.tanh),
        (topi.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        (topi.negative, np.negative),
        (topi.abs, np.abs),
        (topi.floor, np.floor),
        (topi.trunc, np.trunc),
        (topi.nn.relu, lambda x: np.maximum(x, 0)),
    ],
)
def test_unary_operators_are_elementwise_computes(op, ref):
    A, a = _a()
    out = op(A)
    assert out.op.tag == "elemwise" and out.shape == A.shape
    check(out, [A], [a], ref(a), rtol=1e-5, atol=1e-6)


def test_sqrt_log_and_clip():
    A = te.placeholder((4, 9), name="A")
    a = random((4, 9), low=0.1, high=3.0)
    check([topi.sqrt(A), topi.log(A)], [A], [a], [np.sqrt(a), np.log(a)], atol=1e-6)
    check(topi.clip(A, 0.5, 2.0), [A], [a], np.clip(a, 0.5, 2.0))


def test_cast_converts_each_element():
    A, a = _a()
    out = topi.cast(A * 10.0, "int32")
    assert out.dtype == "int32"
    check(out, [A], [a], (a.astype("float32") * 10).astype("int32"))


@pytest.mark.parametrize(
    "op, ref, name",
    [
        (topi.add, np.add, "T_add"),
        (topi.subtract, np.subtract, "T_subtract"),
        (topi.multiply, np.multiply, "T_multiply"),
        (topi.divide, np.divide, "T_divide"),
        (topi.maximum, np.maximum, "T_maximum"),
        (topi.minimum, np.minimum, "T_minimum"),
    ],
)
def test_binary_operators_broadcast_as_numpy(op, ref, name):
    A, a = _a()
    B = te.placeholder((5, 1), name="B")
    b = random((5, 1), low=0.5, high=2.0, seed=1)
    out = op(A, B)
    assert (out.name, out.op.tag) == (name, "broadcast")
    check(out, [A, B], [a, b], ref(a, b), rtol=1e-5)


def test_a_tensor_and_a_scalar_give_an_elementwise_compute():
    A, a = _a()
    out = topi.maximum(A, 0.25)
    assert (out.name, out.op.tag) == ("T_maximum", "elemwise")
    check(out, [A], [a], np.maximum(a, 0.25))
    check(topi.power(2.0, A), [A], [a], np.power(2.0, a), rtol=1e-5)


def test_integer_divide_and_mod_round_toward_zero_as_c_does():
    A = te.placeholder((3, 8), dtype="int32", name="A")
    B = te.placeholder((8,), dtype="int32", name="B")
    a = random((3, 8), "int32", -20, 20)
    b = np.array([3, -3, 4, -5, 7, 2, -2, 6], "int32")
    quotient = np.trunc(a / b).astype("int32")
    check(topi.divide(A, B), [A, B], [a, b], quotient)
    check(topi.mod(A, B), [A, B], [a, b], a - quotient * b)
    check(topi.floor_divide(A, B), [A, B], [a, b], a // b)
    check(topi.floor_mod(A, B), [A, B], [a, b], a % b)


def test_comparisons_give_bools():
    A, a = _a()
    B = te.placeholder((7,), name="B")
    b = random((7,), seed=2)
    for op, ref in [(topi.less, np.less), (topi.greater_equal, np.greater_equal)]:
        out = op(A, B)
        assert out.dtype == "bool"
        check(out, [A, B], [a, b], ref(a, b))


def test_broadcast_to_repeats_the_dimensions_of_size_one():
    B = te.placeholder((5, 1), name="B")
    b = random((5, 1))
    out = topi.broadcast_to(B, (3, 5, 7))
    assert (out.name, out.op.tag) == ("T_broadcast_to", "broadcast")
    check(out, [B], [b], np.broadcast_to(b, (3, 5, 7)))


def test_shapes_that_do_not_broadcast_are_refused():
    A, _ = _a()
    with pytest.raises(AlgorithmError, match="cannot broadcast 'A'"):
        topi.add(A, te.placeholder((4, 7), name="C"))
    with pytest.raises(AlgorithmError, match="broadcast_to: 'C' of shape"):
        topi.broadcast_to(te.placeholder((4, 7), name="C"), (3, 5, 7))


def test_full_and_full_like():
    A, a = _a()
    check(topi.full((2, 3), "float32", 1.5), [], [], np.full((2, 3), 1.5, "float32"))
    out = topi.full_like(A, -2.0)
    assert out.shape == A.shape and not out.op.input_tensors
    check(out, [], [], np.full(a.shape, -2.0, "float32"))
