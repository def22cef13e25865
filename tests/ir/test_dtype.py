"""The dtype promotion rules of schedlang/ir/dtype.py's module docstring, rule by rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt

from .util import assert_matches, elementwise, random_array, rng


def _expr(dtype):
    return sl.placeholder((7,), dtype, name=f"P_{dtype}")[0]


def test_equal_dtypes_stay():
    for name in dt.ALL:
        assert dt.promote(name, name) == name
        if name != "bool":
            assert (_expr(name) - _expr(name)).dtype == name


@pytest.mark.parametrize(
    "dtype, value",
    [("int8", 3), ("uint8", 3), ("int64", 3), ("float16", 3), ("float16", 2.5)]
    + [("bfloat16", 2.5), ("float64", 2.5), ("float64", 3), ("int32", True)],
)
def test_python_scalar_takes_the_expression_dtype(dtype, value):
    x = _expr(dtype)
    for e in (x + value, value + x, x * value, value - x, x // value, value % x):
        assert e.dtype == dtype
    assert (x < value).dtype == "bool"
    assert (x < value).a.dtype == dtype and (x < value).b.dtype == dtype


@pytest.mark.parametrize("a", ["int8", "int32", "uint8", "uint32", "int64"])
@pytest.mark.parametrize("b", ["float16", "bfloat16", "float32", "float64"])
def test_int_with_float_gives_the_float(a, b):
    assert dt.promote(a, b) == b and dt.promote(b, a) == b
    assert (_expr(a) * _expr(b)).dtype == b
    assert (_expr(b) - _expr(a)).dtype == b


def test_two_floats_give_the_wider():
    assert dt.promote("float16", "float32") == "float32"
    assert dt.promote("float32", "float64") == "float64"
    assert dt.promote("bfloat16", "float64") == "float64"
    assert (_expr("float16") + _expr("float32")).dtype == "float32"


def test_float16_with_bfloat16_gives_float32():
    assert dt.promote("float16", "bfloat16") == "float32"
    assert dt.promote("bfloat16", "float16") == "float32"
    assert (_expr("bfloat16") * _expr("float16")).dtype == "float32"


def test_same_signedness_integers_give_the_wider():
    assert dt.promote("int8", "int32") == "int32"
    assert dt.promote("int64", "int16") == "int64"
    assert dt.promote("uint8", "uint32") == "uint32"


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("uint8", "int8", "int16"),
        ("uint32", "int32", "int64"),
        ("uint8", "int16", "int16"),
        ("uint8", "int32", "int32"),
        ("uint32", "int8", "int64"),
        ("uint32", "int64", "int64"),
    ],
)
def test_signed_with_unsigned_gives_the_smallest_signed_that_holds_both(a, b, expected):
    assert dt.promote(a, b) == expected and dt.promote(b, a) == expected
    assert (_expr(a) + _expr(b)).dtype == expected


def test_python_float_with_an_int_expression_gives_float32():
    for name in ("int8", "int32", "int64", "uint8"):
        assert (_expr(name) * 0.5).dtype == "float32"
        assert (0.5 + _expr(name)).dtype == "float32"
    assert (_expr("int32") ** 0.5).dtype == "float32"


def test_bool_with_int_gives_the_int():
    assert dt.promote("bool", "int8") == "int8"
    assert dt.promote("uint32", "bool") == "uint32"
    cond = _expr("float32") > 0
    assert (cond + _expr("int16")).dtype == "int16"
    assert (cond * 2.5).dtype == "float32"
    assert (cond + 1).dtype == "int32"
    assert (1 + cond).dtype == "int32"


def test_promotion_is_what_the_evaluator_computes():
    gen = rng()
    u = random_array(gen, (13, 5), "uint8", 0, 255)
    s = random_array(gen, (13, 5), "int8", -128, 127)
    assert_matches(elementwise(lambda x, y: x + y, u, s), u.astype("int16") + s)
    u32 = random_array(gen, (13, 5), "uint32", 0, 2**32 - 1)
    s32 = random_array(gen, (13, 5), "int32", -(2**31), 2**31 - 1)
    assert_matches(elementwise(lambda x, y: x - y, u32, s32), u32.astype("int64") - s32)
    h = random_array(gen, (13, 5), "float16")
    bf = random_array(gen, (13, 5), "bfloat16")
    assert_matches(
        elementwise(lambda x, y: x * y, h, bf), h.astype("float32") * bf.astype("float32")
    )
    i = random_array(gen, (13, 5), "int32", -9, 9)
    assert_matches(elementwise(lambda x: x * 0.25, i), i.astype("float32") * np.float32(0.25))
    flags = random_array(gen, (13, 5), "bool")
    assert_matches(elementwise(lambda f, x: f + x, flags, i), flags.astype("int32") + i)


def test_canonical_names():
    assert dt.canonical("float32") == "float32"
    assert dt.canonical(np.float16) == "float16"
    assert dt.canonical(np.dtype("uint8")) == "uint8"
    assert dt.canonical(ml_dtypes.bfloat16) == "bfloat16"
    assert dt.canonical(float) == "float32"
    assert dt.canonical(int) == "int32"
    assert dt.canonical(bool) == "bool"
    assert dt.canonical("float") == "float32"
    with pytest.raises(sl.AlgorithmError, match="unsupported dtype 'complex64'"):
        dt.canonical("complex64")
    with pytest.raises(sl.AlgorithmError, match="unsupported dtype 'float8'"):
        sl.placeholder((3,), "float8")


def test_const_dtypes_and_ranges():
    assert sl.const(3).dtype == "int32"
    assert sl.const(2**40).dtype == "int64"
    assert sl.const(1.5).dtype == "float32"
    assert sl.const(True).dtype == "bool"
    assert sl.const(3, "float16").value == 3.0
    assert sl.const(2.0, "int8").value == 2
    with pytest.raises(sl.AlgorithmError, match=r"constant 300 does not fit in int8 \[-128, 127\]"):
        sl.const(300, "int8")
    with pytest.raises(sl.AlgorithmError, match="constant 2.5 is not an integer"):
        sl.const(2.5, "int32")
    with pytest.raises(sl.AlgorithmError, match="does not fit in uint8"):
        _expr("uint8") + 256


@pytest.mark.parametrize("name", [n for n in dt.ALL if n != "bool"])
def test_limits_match_numpy(name):
    info = ml_dtypes.finfo if dt.is_float(name) else np.iinfo
    limits = info(dt.to_numpy(name))
    assert dt.max_value(name) == limits.max
    assert dt.min_value(name) == limits.min
    assert dt.itemsize(name) == dt.to_numpy(name).itemsize


def test_bool_limits():
    assert dt.max_value("bool") is True and dt.min_value("bool") is False


def test_python_float_with_an_int_is_float32_in_the_loop_nest_and_the_kernel():
    """TE's rule, as docs/concepts.md states it: the cast is printed, and the CPU kernel
    computes in float32 as the reference does (numpy alone would give float64)."""
    I = sl.placeholder((37,), "int32", name="I")
    S = sl.compute((37,), lambda i: I[i] * 0.1 - 3.0, name="S")
    s = sl.create_schedule(S)
    assert "S[i] = float32(I[i]) * 0.1 - 3.0" in str(sl.lower(s, [I, S]))
    i = random_array(rng(), 37, "int32", -1000, 1000)
    out = sl.build(s, [I, S])(i)
    assert out.dtype == np.float32 and sl.evaluate(S, {I: i}).dtype == np.float32
    np.testing.assert_allclose(out, sl.evaluate(S, {I: i}), rtol=1e-6, atol=1e-5)
    assert sl.placeholder((2,), "float", name="F").dtype == "float32"
