"""Every Python operator on expressions, evaluated by the reference and compared with numpy."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt

from .util import assert_matches, elementwise, random_array, rng

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint32"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
SHAPES = [(7,), (13, 5), (31,)]

ARITHMETIC = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}
BITWISE = {
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
SHIFTS = {"<<": operator.lshift, ">>": operator.rshift}
COMPARISONS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _operands(dtype, shape, nonzero_rhs=False):
    gen = rng()
    low = 0 if dtype.startswith("uint") else -9
    a = random_array(gen, shape, dtype, low, 9)
    b = random_array(gen, shape, dtype, low if not nonzero_rhs else 1, 9, nonzero=nonzero_rhs)
    return a, b


def _scalar(value, dtype):
    """A numpy scalar of `dtype`: numpy then computes in `dtype`, as schedlang does."""
    return dt.to_numpy(dtype).type(value)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("op", list(ARITHMETIC))
def test_arithmetic_between_tensors(op, dtype, shape):
    fn = ARITHMETIC[op]
    a, b = _operands(dtype, shape, nonzero_rhs=op in ("//", "%"))
    assert_matches(elementwise(fn, a, b), fn(a, b))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("op", list(ARITHMETIC))
def test_arithmetic_with_python_scalar_on_either_side(op, dtype):
    fn = ARITHMETIC[op]
    a, _ = _operands(dtype, (13, 5))
    positive = random_array(rng(), (13, 5), dtype, 1, 9)
    scalar = 3 if dt.is_int(dtype) else 2.5
    assert_matches(elementwise(lambda x: fn(x, scalar), a), fn(a, _scalar(scalar, dtype)))
    assert_matches(
        elementwise(lambda x: fn(scalar, x), positive), fn(_scalar(scalar, dtype), positive)
    )


def test_floor_division_and_modulo_follow_numpy_for_negative_operands():
    a = np.array([7, -7, 7, -7, 0, 13, -13], dtype="int32")
    b = np.array([2, 2, -2, -2, 3, -5, 4], dtype="int32")
    assert_matches(elementwise(operator.floordiv, a, b), [3, -4, -4, 3, 0, -3, -4], "int32")
    assert_matches(elementwise(operator.mod, a, b), [1, 1, -1, -1, 0, -2, 3], "int32")
    x = np.array([7.5, -7.5, 7.5, -7.5, 1.25, -0.5, 3.0], dtype="float32")
    y = np.array([2.0, 2.0, -2.0, -2.0, 0.5, 4.0, 1.5], dtype="float32")
    assert_matches(elementwise(operator.floordiv, x, y), np.floor_divide(x, y))
    assert_matches(elementwise(operator.mod, x, y), np.remainder(x, y))
    assert_matches(elementwise(lambda u: u // 4, a), a // 4)
    assert_matches(elementwise(lambda u: -7 % u, b), np.int32(-7) % b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_true_division_of_floats(dtype):
    a, b = _operands(dtype, (13, 5), nonzero_rhs=True)
    assert_matches(elementwise(operator.truediv, a, b), a / b)
    assert_matches(elementwise(lambda x: x / 4, a), a / _scalar(4, dtype))
    assert_matches(elementwise(lambda x: 1.5 / x, b), _scalar(1.5, dtype) / b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_power_of_floats(dtype):
    gen = rng()
    base = random_array(gen, (31,), dtype, 0.5, 3)
    exponent = random_array(gen, (31,), dtype, -2, 2)
    ref = lambda x, y: np.power(x.astype("float64"), y).astype(x.dtype)  # noqa: E731
    assert_matches(elementwise(operator.pow, base, exponent), ref(base, exponent))
    assert_matches(elementwise(lambda x: x**2, base), ref(base, 2))
    assert_matches(elementwise(lambda x: x**0.5, base), ref(base, 0.5))
    assert_matches(
        elementwise(lambda y: 2.0**y, exponent), ref(np.full(31, 2, base.dtype), exponent)
    )


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_power_with_constant_exponent(dtype):
    a = random_array(rng(), (7,), dtype, 0 if dtype == "uint8" else -5, 5)
    for exponent in (0, 1, 2, 3):
        result = elementwise(lambda x, e=exponent: x**e, a)
        assert_matches(result, a ** _scalar(exponent, dtype))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(BITWISE))
def test_bitwise_on_integers(op, dtype, shape):
    fn = BITWISE[op]
    a, b = _operands(dtype, shape)
    assert_matches(elementwise(fn, a, b), fn(a, b))
    assert_matches(elementwise(lambda x: fn(x, 6), a), fn(a, _scalar(6, dtype)))
    assert_matches(elementwise(lambda x: fn(5, x), a), fn(_scalar(5, dtype), a))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(SHIFTS))
def test_shifts(op, dtype):
    fn = SHIFTS[op]
    gen = rng()
    a = random_array(gen, (13, 5), dtype, 0 if dtype.startswith("uint") else -50, 50)
    amount = random_array(gen, (13, 5), dtype, 0, 4)
    assert_matches(elementwise(fn, a, amount), fn(a, amount))
    assert_matches(elementwise(lambda x: fn(x, 2), a), fn(a, _scalar(2, dtype)))
    assert_matches(elementwise(lambda s: fn(3, s), amount), fn(_scalar(3, dtype), amount))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32", "float64", "float16"])
def test_negation(dtype):
    a, _ = _operands(dtype, (31,))
    assert_matches(elementwise(operator.neg, a), -a)
    assert_matches(elementwise(lambda x: -(x + 1), a), -(a + _scalar(1, dtype)))


@pytest.mark.parametrize("dtype", INTS)
def test_invert_of_integers(dtype):
    a, _ = _operands(dtype, (13, 5))
    assert_matches(elementwise(operator.invert, a), ~a)


def test_logical_operators_on_bools():
    gen = rng()
    p, q = random_array(gen, (31,), "bool"), random_array(gen, (31,), "bool")
    assert p.any() and not p.all()
    assert_matches(elementwise(operator.and_, p, q), p & q)
    assert_matches(elementwise(operator.or_, p, q), p | q)
    assert_matches(elementwise(operator.xor, p, q), p ^ q)
    assert_matches(elementwise(operator.invert, p), ~p)
    assert_matches(elementwise(lambda x, y: ~(x & y) | (x ^ y), p, q), ~(p & q) | (p ^ q))
    assert_matches(elementwise(lambda x: x & True, p), p)
    assert_matches(elementwise(lambda x: False | x, p), p)


@pytest.mark.parametrize("dtype", INTS + FLOATS + ["bool"])
@pytest.mark.parametrize("op", list(COMPARISONS))
def test_comparisons(op, dtype):
    fn = COMPARISONS[op]
    gen = rng()
    a = random_array(gen, (13, 5), dtype, 0, 4)
    b = random_array(gen, (13, 5), dtype, 0, 4)
    b[0] = a[0]  # some equal pairs, whatever the dtype
    assert_matches(elementwise(fn, a, b), fn(a, b), "bool")
    if dtype != "bool":
        two = _scalar(2, dtype)
        assert_matches(elementwise(lambda x: fn(x, 2), a), fn(a, two), "bool")
        assert_matches(elementwise(lambda x: fn(2, x), a), fn(two, a), "bool")


def test_comparison_of_mixed_dtypes_compares_promoted_values():
    gen = rng()
    a = random_array(gen, (31,), "int8", -100, 100)
    b = random_array(gen, (31,), "float32", -100, 100)
    assert_matches(elementwise(operator.lt, a, b), a.astype("float32") < b)
    u = random_array(gen, (31,), "uint8", 0, 255)
    assert_matches(elementwise(operator.gt, a, u), a.astype("int16") > u.astype("int16"))


def test_unary_plus_is_the_expression_itself():
    A = sl.placeholder((7,), name="A")
    x = A[0]
    assert +x is x


def test_operators_on_index_variables():
    gen = rng()
    a = random_array(gen, (13, 5), "int32", -9, 9)
    A = sl.placeholder((13, 5), "int32", name="A")
    C = sl.compute((13, 5), lambda i, j: (i * 5 + j) // 3 - A[i, j] % 4 + (i ^ j), name="C")
    i, j = np.indices((13, 5), dtype="int32")
    assert_matches(sl.evaluate(C, {A: a}), (i * 5 + j) // 3 - a % 4 + (i ^ j))
