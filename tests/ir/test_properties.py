"""Property tests: random expression trees and random shifted reads against direct numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlang as sl

from .util import random_array, rng

N = 13
F = sl.placeholder((N,), "float32", name="F")
G = sl.placeholder((N,), "float32", name="G")
I = sl.placeholder((N,), "int32", name="I")
J = sl.placeholder((N,), "int32", name="J")
_gen = rng()
ARRAYS = {
    F: random_array(_gen, N, "float32"),
    G: random_array(_gen, N, "float32", nonzero=True),
    I: random_array(_gen, N, "int32", -20, 20),
    J: random_array(_gen, N, "int32", -20, 20, nonzero=True),
}
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

# A tree is a tuple: (kind, ...). Each is turned into a schedlang expression and a numpy value
# by the two small interpreters below, which share nothing but the tree.


def _int_leaf():
    return st.one_of(
        st.sampled_from([("read", I), ("read", J), ("axis",)]),
        st.integers(-7, 7).map(lambda v: ("const", v)),
        st.tuples(st.sampled_from([I, J]), st.integers(-3, 3), st.integers(0, 20)).map(
            lambda t: ("affine_read", *t)  # T[(a * i + b) % N]: in bounds for every a, b
        ),
    )


def _float_leaf():
    return st.one_of(
        st.sampled_from([("read", F), ("read", G)]),
        st.floats(-4, 4, width=32).map(lambda v: ("const", v)),
    )


def _int_tree(depth):
    if depth == 0:
        return _int_leaf()
    sub = _int_tree(depth - 1)
    return st.one_of(
        _int_leaf(),
        st.tuples(st.sampled_from(["+", "-", "*", "&", "|", "^", "min", "max"]), sub, sub).map(
            lambda t: ("binary", *t)
        ),
        st.tuples(st.sampled_from(["//", "%"]), sub, sub).map(lambda t: ("divide", *t)),
        st.tuples(st.sampled_from(["-", "~"]), sub).map(lambda t: ("unary", *t)),
        st.tuples(sub, sub, sub).map(lambda t: ("select_int", *t)),
    )


def _float_tree(depth):
    if depth == 0:
        return _float_leaf()
    sub = _float_tree(depth - 1)
    return st.one_of(
        _float_leaf(),
        st.tuples(st.sampled_from(["+", "-", "*", "/", "min", "max"]), sub, sub).map(
            lambda t: ("binary", *t)
        ),
        st.tuples(st.sampled_from(["-", "abs", "floor", "tanh"]), sub).map(lambda t: ("unary", *t)),
        st.tuples(_int_tree(depth - 1), sub, sub).map(lambda t: ("select_float", *t)),
        _int_tree(depth - 1).map(lambda t: ("to_float", t)),
    )


_SL_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "min": sl.minimum,
    "max": sl.maximum,
}
_NP_BINARY = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
    "min": np.minimum,
    "max": np.maximum,
}
_SL_UNARY = {
    "-": lambda a: -a,
    "~": lambda a: ~a,
    "abs": sl.abs,
    "floor": sl.floor,
    "tanh": sl.tanh,
}
_NP_UNARY = {"-": np.negative, "~": np.invert, "abs": np.abs, "floor": np.floor, "tanh": np.tanh}


def _to_sl(tree, i):
    kind = tree[0]
    if kind == "read":
        return tree[1][i]
    if kind == "affine_read":
        return tree[1][(tree[2] * i + tree[3]) % N]
    if kind == "axis":
        return i
    if kind == "const":
        return tree[1]  # a Python scalar: takes the dtype of its neighbour
    if kind == "binary":
        return _SL_BINARY[tree[1]](_to_sl(tree[2], i), _to_sl(tree[3], i))
    if kind == "divide":
        divisor = _to_sl(tree[3], i) % 5 + 1  # 1..5: never zero
        numerator = _to_sl(tree[2], i)
        return numerator // divisor if tree[1] == "//" else numerator % divisor
    if kind == "unary":
        return _SL_UNARY[tree[1]](_to_sl(tree[2], i))
    if kind in ("select_int", "select_float"):
        return sl.if_then_else(_to_sl(tree[1], i) > 0, _to_sl(tree[2], i), _to_sl(tree[3], i))
    if kind == "to_float":
        return sl.const(0, "int32") + _to_sl(tree[1], i) + 0.0
    raise AssertionError(kind)


def _to_np(tree, dtype):
    """The tree's value over the whole index range, computed in `dtype` with numpy."""
    kind = tree[0]
    i = np.arange(N, dtype="int32")
    if kind == "read":
        return ARRAYS[tree[1]]
    if kind == "affine_read":
        return ARRAYS[tree[1]][(tree[2] * i + tree[3]) % N]
    if kind == "axis":
        return i
    if kind == "const":
        return np.full(N, tree[1], dtype=dtype)
    if kind == "binary":
        return _NP_BINARY[tree[1]](_to_np(tree[2], dtype), _to_np(tree[3], dtype))
    if kind == "divide":
        divisor = _to_np(tree[3], dtype) % np.int32(5) + np.int32(1)
        numerator = _to_np(tree[2], dtype)
        return numerator // divisor if tree[1] == "//" else numerator % divisor
    if kind == "unary":
        return _NP_UNARY[tree[1]](_to_np(tree[2], dtype))
    if kind in ("select_int", "select_float"):
        cond = _to_np(tree[1], "int32") > 0
        return np.where(cond, _to_np(tree[2], dtype), _to_np(tree[3], dtype))
    if kind == "to_float":
        return _to_np(tree[1], "int32").astype("float32")
    raise AssertionError(kind)


def _check(tree, dtype):
    C = sl.compute((N,), lambda i: sl.const(0, dtype) + _to_sl(tree, i), name="C")
    assert C.dtype == dtype
    inputs = {t: a for t, a in ARRAYS.items() if t in C.op.input_tensors}
    with np.errstate(all="ignore"):
        expected = _to_np(tree, dtype).astype(dtype)
    np.testing.assert_array_equal(sl.evaluate(C, inputs), expected)


@SETTINGS
@given(_int_tree(3))
def test_random_integer_expressions(tree):
    _check(tree, "int32")


@SETTINGS
@given(_float_tree(3))
def test_random_float_expressions(tree):
    _check(tree, "float32")


@SETTINGS
@given(
    shift=st.integers(-15, 15),
    scale=st.integers(1, 3),
    fill=st.floats(-2, 2, width=32),
)
def test_random_guarded_shifts_are_padding(shift, scale, fill):
    n = sl.var("n")
    A = sl.placeholder((n,), name="A")
    B = sl.compute(
        (n,),
        lambda i: sl.if_then_else(
            sl.all(scale * i + shift >= 0, scale * i + shift < n), A[scale * i + shift], fill
        ),
        name="B",
    )
    a = ARRAYS[F]
    index = scale * np.arange(N) + shift
    inside = (index >= 0) & (index < N)
    expected = np.where(inside, a[np.clip(index, 0, N - 1)], np.float32(fill))
    np.testing.assert_array_equal(sl.evaluate(B, {A: a}), expected)
    unguarded = sl.compute((n,), lambda i: A[scale * i + shift], name="U")
    if inside.all():
        np.testing.assert_array_equal(sl.evaluate(unguarded, {A: a}), a[index])
    else:
        first = int(np.argmin(inside))
        with pytest.raises(sl.AlgorithmError, match=rf"at i={first} it reads A\["):
            sl.evaluate(unguarded, {A: a})
