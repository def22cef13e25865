"""The 8-bit floats in the algorithm layer: names, promotion, the reference's conversions (PTX's
``cvt.rn.satfinite``) and arithmetic (float32, rounded after each operation), and the
loop-IR interpreter agreeing with the reference bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.loopir.interpret import run

from .float8_values import codes, float32_sweep, nearest_even
from .util import rng

FLOAT8 = dt.FLOAT8


def _bytes(values) -> np.ndarray:
    return np.asarray(values).view(np.uint8)


def _random(gen, n: int, dtype: str, scale: float = 64.0) -> np.ndarray:
    """Random values of `dtype` spread over its range (a few NaNs and subnormals among them)."""
    values = gen.standard_normal(n) * scale * gen.choice([1e-3, 1.0, 10.0], n)
    values[:3] = [np.nan, 2.0**-9, -(2.0**-8)]
    return dt.to_float8(values, dtype)


def test_names_and_limits():
    assert dt.canonical(ml_dtypes.float8_e4m3fn) == "float8_e4m3fn"
    assert dt.canonical(np.dtype(ml_dtypes.float8_e5m2)) == "float8_e5m2"
    assert dt.canonical("e4m3_float8") == "float8_e4m3fn"  # TVM's names
    assert dt.canonical("e5m2_float8") == "float8_e5m2"
    assert sl.placeholder((3,), "float8_e4m3fn").dtype == "float8_e4m3fn"
    assert (dt.max_value("float8_e4m3fn"), dt.min_value("float8_e5m2")) == (448.0, -57344.0)
    assert dt.itemsize("float8_e5m2") == 1 and dt.is_float("float8_e5m2")
    assert sl.max_value("float8_e4m3fn").value == 448.0


@pytest.mark.parametrize("dtype", FLOAT8)
def test_promotion_follows_the_other_float_or_keeps_the_8_bit_one(dtype):
    x = sl.placeholder((4,), dtype, name="X")[0]
    for other in ("float16", "bfloat16", "float32", "float64"):
        y = sl.placeholder((4,), other, name="Y")[0]
        assert (x * y).dtype == other and (y + x).dtype == other
    for other in ("int8", "int32", "uint32", "int64", "bool"):
        assert (x + sl.placeholder((4,), other, name="I")[0]).dtype == dtype
    assert (x * 0.5).dtype == dtype and (3 - x).dtype == dtype
    assert (x.astype("float32") * x).dtype == "float32"


def test_the_two_8_bit_floats_have_no_common_dtype():
    a = sl.placeholder((4,), "float8_e4m3fn", name="A")
    b = sl.placeholder((4,), "float8_e5m2", name="B")
    with pytest.raises(sl.AlgorithmError, match=r"float8_e4m3fn and float8_e5m2 have no common"):
        sl.compute((4,), lambda i: a[i] * b[i], name="C")
    both = sl.compute((4,), lambda i: a[i].astype("float16") * b[i], name="C")
    assert both.dtype == "float16"


@pytest.mark.parametrize("dtype", FLOAT8)
def test_conversion_rounds_to_nearest_even_and_saturates(dtype):
    values = float32_sweep(dtype)
    np.testing.assert_array_equal(_bytes(dt.to_float8(values, dtype)), nearest_even(values, dtype))
    with np.errstate(invalid="ignore"):  # NaNs with payloads
        wide = values.astype(np.float64) * (1 + 2.0**-30)  # off the float32 ties, in float64
    np.testing.assert_array_equal(_bytes(dt.to_float8(wide, dtype)), nearest_even(wide, dtype))


@pytest.mark.parametrize(
    "dtype, largest, positive_nan", [("float8_e4m3fn", 0x7E, 0x7F), ("float8_e5m2", 0x7B, 0x7F)]
)
def test_what_ptx_cvt_satfinite_gives(dtype, largest, positive_nan):
    """The answers of ``cvt.rn.satfinite`` on the GPU: infinities and finite values past the
    range give the largest finite value with their sign, and every NaN the one NaN 0x7F (where
    ml_dtypes gives NaN or infinity past the range and keeps a NaN's sign)."""
    top = dt.max_value(dtype)
    values = np.array([np.inf, -np.inf, 1e9, -1e9, top * 1.1, np.nan, -np.nan], np.float32)
    got = _bytes(dt.to_float8(values, dtype))
    assert (
        list(got)
        == [largest, largest | 0x80, largest, largest | 0x80, largest] + [positive_nan] * 2
    )
    assert _bytes(dt.to_float8(np.float32(-1e-30), dtype)) == 0x80  # -0 keeps its sign
    assert _bytes(dt.to_float8(np.int64(-(2**40)), dtype)) == largest | 0x80


@pytest.mark.parametrize("dtype", FLOAT8)
def test_every_code_reads_as_ml_dtypes_reads_it(dtype):
    p = sl.placeholder((256,), dtype, name="P")
    wide = sl.compute((256,), lambda i: p[i].astype("float32"), name="W")
    got = sl.evaluate(wide, {p: codes(dtype)})
    np.testing.assert_array_equal(got, codes(dtype).astype(np.float32))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_arithmetic_runs_in_float32_and_rounds_with_saturation(dtype):
    gen = rng()
    a, b = _random(gen, 301, dtype), _random(gen, 301, dtype)
    pa = sl.placeholder((301,), dtype, name="A")
    pb = sl.placeholder((301,), dtype, name="B")
    c = sl.compute((301,), lambda i: -(pa[i] * pb[i]) + pa[i] * 0.75, name="C")
    wa, wb = a.astype(np.float32), b.astype(np.float32)
    product = dt.to_float8(wa * wb, dtype).astype(np.float32)
    scaled = dt.to_float8(wa * np.float32(0.75), dtype).astype(np.float32)
    want = dt.to_float8(dt.to_float8(-product, dtype).astype(np.float32) + scaled, dtype)
    np.testing.assert_array_equal(_bytes(sl.evaluate(c, {pa: a, pb: b})), _bytes(want))
    big = np.full(301, dt.max_value(dtype), np.float32)
    saturated = sl.evaluate(c, {pa: dt.to_float8(big, dtype), pb: dt.to_float8(big, dtype)})
    assert not np.isnan(saturated.astype(np.float32)).any()  # ml_dtypes' own `*` gives NaN


@pytest.mark.parametrize("dtype", FLOAT8)
def test_casts_and_constants_saturate(dtype):
    p = sl.placeholder((5,), "float32", name="P")
    cast = sl.compute((5,), lambda i: p[i].astype(dtype) + sl.const(1e6, dtype), name="C")
    values = np.array([1.0, -1e9, np.inf, np.nan, 3.0], np.float32)
    got = sl.evaluate(cast, {p: values}).astype(np.float32)
    top = dt.max_value(dtype)
    np.testing.assert_array_equal(got, [top, 0.0, top, np.nan, top])


@pytest.mark.parametrize("dtype", FLOAT8)
def test_a_sum_accumulates_in_its_dtype_one_term_at_a_time(dtype):
    n = 67
    p = sl.placeholder((3, n), dtype, name="P")
    k = sl.reduce_axis((0, n), name="k")
    total = sl.compute((3,), lambda i: sl.sum(p[i, k], axis=k), name="S")
    values = dt.to_float8(np.abs(rng().standard_normal((3, n))) * 40 + 1, dtype)
    want = np.zeros(3, np.float32)
    for j in range(n):
        want = dt.to_float8(want + values[:, j].astype(np.float32), dtype).astype(np.float32)
    np.testing.assert_array_equal(sl.evaluate(total, {p: values}).astype(np.float32), want)


@pytest.mark.parametrize("dtype", FLOAT8)
def test_the_interpreter_agrees_bit_for_bit(dtype):
    n = sl.var("n")
    a = sl.placeholder((n,), dtype, name="A")
    s = sl.placeholder((n,), "float32", name="S")
    c = sl.compute((n,), lambda i: (a[i] * a[i] - 1.5) * 2, name="C")
    d = sl.compute((n,), lambda i: (a[i].astype("float32") * a[i] * s[i]).astype(dtype), name="D")
    sched = sl.create_schedule([c, d])
    sched[c].split(c.op.axis[0], factor=8)
    func = sl.lower(sched, [a, s, c, d])
    gen = rng()
    values, scale = _random(gen, 37, dtype), gen.standard_normal(37).astype(np.float32)
    got = [np.full(37, np.nan, np.float32).astype(dt.to_numpy(dtype)) for _ in range(2)]
    run(func, [values, scale, *got])
    want = sl.reference([c, d], {a: values, s: scale})
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_bytes(g), _bytes(w))
