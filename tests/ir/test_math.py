"""Math functions, elementwise max/min, selects, logic, constants and casts against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from scipy import special

import schedlang as sl
from schedlang.ir import dtype as dt

from .util import assert_matches, elementwise, random_array, rng

FLOATS = ["float32", "float64", "float16", "bfloat16"]

# name -> (numpy function on float64 values, low, high of the random inputs)
UNARY = {
    "exp": (np.exp, -3, 3),
    "exp2": (np.exp2, -3, 3),
    "log": (np.log, 0.1, 8),
    "log2": (np.log2, 0.1, 8),
    "sqrt": (np.sqrt, 0.1, 8),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.1, 8),
    "tanh": (np.tanh, -3, 3),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -6, 6),
    "erf": (special.erf, -2, 2),
    "sin": (np.sin, -3, 3),
    "cos": (np.cos, -3, 3),
    "abs": (np.abs, -4, 4),
    "floor": (np.floor, -4, 4),
    "ceil": (np.ceil, -4, 4),
    "round": (np.rint, -4, 4),
}


def _exact(fn, *arrays):
    """`fn` computed in float64 and rounded once to the inputs' dtype."""
    return fn(*(a.astype("float64") for a in arrays)).astype(arrays[0].dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_math(name, dtype):
    fn, low, high = UNARY[name]
    a = random_array(rng(), (13, 5), dtype, low, high)
    result = elementwise(getattr(sl, name), a)
    assert_matches(result, _exact(fn, a))


@pytest.mark.parametrize("dtype", FLOATS)
def test_math_of_a_compound_expression_with_scalars(dtype):
    a = random_array(rng(), (31,), dtype, -2, 2)
    result = elementwise(lambda x: sl.exp(x * 0.5) + sl.tanh(1.0 - x), a)
    half, one = dt.to_numpy(dtype).type(0.5), dt.to_numpy(dtype).type(1.0)
    expected = _exact(np.exp, a * half) + _exact(np.tanh, one - a)
    assert_matches(result, expected)


def test_round_is_ties_to_even():
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5], dtype="float32")
    assert_matches(elementwise(sl.round, ties), [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0], "float32")
    assert np.signbit(elementwise(sl.round, ties)[3])


@pytest.mark.parametrize("name", ["abs", "floor", "ceil", "round"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_numeric_functions_of_integers(name, dtype):
    a = random_array(rng(), (13,), dtype, -50, 50)
    expected = np.abs(a) if name == "abs" else a
    assert_matches(elementwise(getattr(sl, name), a), expected)


def _bits_set(values: np.ndarray) -> np.ndarray:
    """Bits set in each value's two's complement, counted one bit at a time."""
    mask = (1 << (values.dtype.itemsize * 8)) - 1
    return np.array([bin(int(v) & mask).count("1") for v in values], dtype=values.dtype)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_popcount_counts_the_bits_the_build_and_the_reference_agree(dtype):
    info = np.iinfo(dtype)
    a = rng().integers(info.min, info.max, 37, dtype=dtype, endpoint=True)
    a[:3] = [0, info.max, info.min]
    expected = _bits_set(a)
    assert_matches(elementwise(sl.popcount, a), expected)
    A = sl.placeholder((sl.var("n"),), dtype, name="A")
    C = sl.compute(A.shape, lambda i: sl.popcount(A[i]) + 1, name="C")
    s = sl.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(inner)
    out = np.zeros(37, dtype)
    sl.build(s, [A, C])(a, out)
    assert_matches(out, expected + 1)


def test_popcount_of_a_float_is_refused():
    with pytest.raises(sl.AlgorithmError, match=r"counts the bits of an integer, not of a float32"):
        sl.popcount(sl.placeholder((3,), name="A")[0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow(dtype):
    gen = rng()
    x = random_array(gen, (13, 5), dtype, 0.25, 3)
    y = random_array(gen, (13, 5), dtype, -2, 2)
    assert_matches(elementwise(sl.pow, x, y), _exact(np.power, x, y))
    assert_matches(elementwise(lambda u: sl.pow(u, 3.0), x), _exact(lambda u: u**3, x))
    assert_matches(elementwise(lambda v: sl.pow(2.0, v), y), _exact(lambda v: np.exp2(v), y))
    assert elementwise(lambda u: sl.pow(u, 2.0), x).dtype == x.dtype


@pytest.mark.parametrize("dtype", FLOATS)
def test_fma(dtype):
    gen = rng()
    a, b, c = (random_array(gen, (31,), dtype) for _ in range(3))
    assert_matches(elementwise(sl.fma, a, b, c), _exact(lambda x, y, z: x * y + z, a, b, c))
    assert_matches(
        elementwise(lambda x, z: sl.fma(x, 2.0, z), a, c),
        _exact(lambda x, z: x * 2 + z, a, c),
    )
    assert_matches(elementwise(lambda y: sl.fma(0.5, y, 1.0), b), _exact(lambda y: 0.5 * y + 1, b))


def test_fma_rounds_once():
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the 2^-24 survives only without an intermediate rounding.
    x = np.full(7, 1 + 2.0**-12, dtype="float32")
    c = np.full(7, -(1 + 2.0**-11), dtype="float32")
    assert_matches(elementwise(sl.fma, x, x, c), np.full(7, 2.0**-24, dtype="float32"))
    assert (elementwise(lambda u, w: u * u + w, x, c) == 0).all()


def test_math_functions_of_mixed_dtypes_promote():
    h = sl.placeholder((3,), "float16", name="H")[0]
    f = sl.placeholder((3,), "float32", name="F")[0]
    i = sl.placeholder((3,), "int32", name="I")[0]
    assert sl.pow(h, f).dtype == "float32"
    assert sl.pow(h, 2).dtype == "float16"
    assert sl.pow(h, 2.0).dtype == "float16"
    assert sl.fma(h, 2.0, 1.0).dtype == "float16"
    assert sl.pow(i, 0.5).dtype == "float32"
    assert sl.exp(i.astype("float64")).dtype == "float64"


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "float32", "float16", "bfloat16"])
def test_maximum_minimum(dtype):
    gen = rng()
    low = 0 if dtype == "uint8" else -9
    a, b = random_array(gen, (13, 5), dtype, low, 9), random_array(gen, (13, 5), dtype, low, 9)
    assert_matches(elementwise(sl.maximum, a, b), np.maximum(a, b))
    assert_matches(elementwise(sl.minimum, a, b), np.minimum(a, b))
    three = dt.to_numpy(dtype).type(3)
    assert_matches(elementwise(lambda x: sl.maximum(x, 3), a), np.maximum(a, three))
    assert_matches(elementwise(lambda x: sl.minimum(3, x), a), np.minimum(three, a))
    assert sl.maximum(sl.placeholder((2,), dtype, name="M")[0], 3).dtype == dtype


@pytest.mark.parametrize(
    "dtype",
    ["int8", "int32", "int64", "uint8", "uint32", "float16", "bfloat16", "float32", "float64"],
)
def test_max_value_min_value(dtype):
    a = random_array(rng(), (7,), dtype, 0, 5)
    info = (np.iinfo if dt.is_int(dtype) else ml_dtypes.finfo)(a.dtype)
    top = elementwise(lambda x: sl.max_value(dtype) + x * 0, a)
    bottom = elementwise(lambda x: sl.min_value(dtype) + x * 0, a)
    assert_matches(top, np.full(7, info.max, dtype=a.dtype))
    assert_matches(bottom, np.full(7, info.min, dtype=a.dtype))
    assert sl.max_value(dtype).dtype == dtype


@pytest.mark.parametrize("choose", [sl.if_then_else, sl.select])
def test_if_then_else(choose):
    gen = rng()
    a, b = random_array(gen, (13, 5)), random_array(gen, (13, 5))
    assert_matches(
        elementwise(lambda x, y: choose(x > y, x, y * 2), a, b), np.where(a > b, a, b * 2)
    )
    assert_matches(
        elementwise(lambda x: choose(x > 0, x, 0.0), a), np.where(a > 0, a, 0).astype(a.dtype)
    )
    assert_matches(
        elementwise(lambda x: choose(x < 1, -1.5, x), a), np.where(a < 1, -1.5, a).astype(a.dtype)
    )
    assert_matches(
        elementwise(lambda x: choose(x < 1, 2, 3), a), np.where(a < 1, 2, 3).astype("int32")
    )


def test_if_then_else_promotes_its_branches():
    gen = rng()
    i = random_array(gen, (31,), "int8", -9, 9)
    x = random_array(gen, (31,), "float16")
    result = elementwise(lambda a, b: sl.if_then_else(a > 0, a, b), i, x)
    assert_matches(result, np.where(i > 0, i.astype("float16"), x))


def test_all_and_any():
    gen = rng()
    a, b, c = (random_array(gen, (13, 5)) for _ in range(3))
    assert_matches(
        elementwise(lambda x, y, z: sl.all(x > 0, y > 0, z > 0), a, b, c),
        (a > 0) & (b > 0) & (c > 0),
    )
    assert_matches(
        elementwise(lambda x, y, z: sl.any(x > 1, y > 1, z < -1), a, b, c),
        (a > 1) | (b > 1) | (c < -1),
    )
    assert_matches(elementwise(lambda x: sl.all(x > 0), a), a > 0)
    assert_matches(elementwise(lambda x: sl.all() & (x > 0), a), a > 0)
    assert_matches(elementwise(lambda x: sl.any() | (x > 0), a), a > 0)
    assert_matches(elementwise(lambda x: sl.any(x > 0, True), a), np.ones(a.shape, bool))


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "float16", "bfloat16", "float64"])
def test_const(dtype):
    a = random_array(rng(), (7,), dtype, 1, 5)
    result = elementwise(lambda x: x + sl.const(3, dtype), a)
    assert_matches(result, a + dt.to_numpy(dtype).type(3))


@pytest.mark.parametrize(
    "source, target",
    [
        ("float32", "int32"),
        ("float32", "float16"),
        ("float32", "bfloat16"),
        ("float16", "float64"),
        ("int32", "float32"),
        ("int32", "int8"),
        ("int8", "uint8"),
        ("int64", "int32"),
        ("bool", "float32"),
        ("bool", "int32"),
        ("float32", "bool"),
        ("int32", "bool"),
    ],
)
def test_astype(source, target):
    a = random_array(rng(), (13, 5), source, -300, 300)
    result = elementwise(lambda x: x.astype(target), a)
    assert_matches(result, a.astype(dt.to_numpy(target)), target)


def test_astype_truncates_floats_towards_zero():
    a = np.array([2.7, -2.7, 0.5, -0.5, 7.0, -7.99, 1e3], dtype="float32")
    assert_matches(elementwise(lambda x: x.astype("int32"), a), [2, -2, 0, 0, 7, -7, 1000], "int32")


def test_astype_to_the_same_dtype_is_the_expression():
    x = sl.placeholder((3,), "float32", name="X")[0]
    assert x.astype("float32") is x
    assert x.astype(np.float16).dtype == "float16"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_the_tiny_values_of_large_negative_inputs(dtype):
    """1 / (1 + exp(-x)) overflows exp below about -88.7 in float32 and returns 0; the value is
    exp(x) / (1 + exp(x)), a subnormal until about -103."""
    a = np.array([-95.0, -100.0, -800.0, -1.0, 0.0, 40.0, np.inf, -np.inf], dtype)
    result = elementwise(sl.sigmoid, a)
    with np.errstate(invalid="ignore"):  # inf / inf at +inf, whose value is 1
        expected = np.exp(a.astype("float64")) / (1 + np.exp(a.astype("float64")))
    expected[a == np.inf] = 1.0
    assert_matches(result, expected.astype(dtype))
    assert result[0] > 0
