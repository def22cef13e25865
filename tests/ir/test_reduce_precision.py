"""The reference accumulates a reduction in its dtype: float16 and bfloat16 one combination at a
time in the order of the reduce axes, rounded after each, as the unscheduled loop nest does;
float32 keeps numpy's (pairwise) summation."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt

HALVES = ("float16", "bfloat16")
# where sequential accumulation of ones stops: 2048 + 1 rounds to 2048 in float16 (11-bit
# significand), 256 + 1 to 256 in bfloat16 (8 bits)
STUCK_AT = {"float16": 2048, "bfloat16": 256}


def row_sum(dtype: str, m: int, n: int, widen: bool = False):
    a = sl.placeholder((m, n), dtype, name="A")
    k = sl.reduce_axis((0, n), name="k")
    term = (lambda i: a[i, k].astype("float32")) if widen else (lambda i: a[i, k])
    return a, sl.compute((m,), lambda i: sl.sum(term(i), axis=k), name="S")


def in_order(values: np.ndarray, combine, start) -> np.ndarray:
    """The oracle: each row of `values` combined left to right with numpy scalars of its dtype."""
    out = []
    for row in values:
        total = values.dtype.type(start)
        for x in row:
            total = values.dtype.type(combine(total, x))
        out.append(total)
    return np.array(out, values.dtype)


def uniform(dtype: str, shape, lo: float, hi: float, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dt.to_numpy(dtype))


@pytest.mark.parametrize("m", [3, 100])  # few outputs (accumulate) and many (a loop over k)
@pytest.mark.parametrize("dtype", HALVES)
def test_a_sum_of_ones_stops_where_the_dtype_does(dtype, m):
    a, s = row_sum(dtype, m, 4096)
    ones = np.ones((m, 4096), dt.to_numpy(dtype))
    result = sl.evaluate(s, {a: ones})
    assert result.dtype == dt.to_numpy(dtype)
    np.testing.assert_array_equal(result, np.full(m, STUCK_AT[dtype], dt.to_numpy(dtype)))


@pytest.mark.parametrize("dtype", HALVES)
def test_accumulating_in_float32_is_asked_for_with_astype(dtype):
    a, s = row_sum(dtype, 3, 4096, widen=True)
    result = sl.evaluate(s, {a: np.ones((3, 4096), dt.to_numpy(dtype))})
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, np.full(3, 4096, np.float32))


@pytest.mark.parametrize("m", [5, 70])
@pytest.mark.parametrize("dtype", HALVES)
def test_sum_and_product_round_every_step_in_order(dtype, m):
    values = uniform(dtype, (m, 301), 0.5, 2.0)
    a, s = row_sum(dtype, m, 301)
    np.testing.assert_array_equal(sl.evaluate(s, {a: values}), in_order(values, np.add, 0))
    near_one = uniform(dtype, (m, 301), 0.98, 1.02)
    k = sl.reduce_axis((0, 301), name="k")
    p = sl.compute((m,), lambda i: sl.prod(a[i, k], axis=k), name="P")
    np.testing.assert_array_equal(sl.evaluate(p, {a: near_one}), in_order(near_one, np.multiply, 1))


@pytest.mark.parametrize("dtype", HALVES)
def test_a_user_reducer_rounds_every_step_in_order(dtype):
    values = uniform(dtype, (7, 129), -2.0, 2.0)
    a = sl.placeholder((7, 129), dtype, name="A")
    k = sl.reduce_axis((0, 129), name="k")
    sum_of_squares = sl.comm_reducer(lambda x, y: x + y * y, lambda t: 0, name="sum_sq")
    r = sl.compute((7,), lambda i: sum_of_squares(a[i, k], axis=k), name="R")
    want = in_order(values, lambda t, x: t + x * x, 0)
    np.testing.assert_array_equal(sl.evaluate(r, {a: values}), want)


def test_the_order_is_lexicographic_over_the_reduce_axes():
    """Over (p, q) the terms come q fastest: an order with p fastest rounds differently."""
    values = uniform("float16", (2, 37, 53), 0.5, 3.0)
    a = sl.placeholder((2, 37, 53), "float16", name="A")
    p, q = sl.reduce_axis((0, 37), name="p"), sl.reduce_axis((0, 53), name="q")
    s = sl.compute((2,), lambda i: sl.sum(a[i, p, q], axis=[p, q]), name="S")
    got = sl.evaluate(s, {a: values})
    np.testing.assert_array_equal(got, in_order(values.reshape(2, -1), np.add, 0))
    transposed = in_order(values.transpose(0, 2, 1).reshape(2, -1), np.add, 0)
    assert not np.array_equal(got, transposed)


def test_where_skips_terms_in_order():
    values = uniform("float16", (4, 500), 0.5, 4.0)
    a = sl.placeholder((4, 500), "float16", name="A")
    k = sl.reduce_axis((0, 500), name="k")
    s = sl.compute((4,), lambda i: sl.sum(a[i, k], axis=k, where=k % 3 != 1), name="S")
    want = in_order(values[:, np.arange(500) % 3 != 1], np.add, 0)
    np.testing.assert_array_equal(sl.evaluate(s, {a: values}), want)


def test_float16_matmul_rounds_products_and_partial_sums():
    a_values, b_values = uniform("float16", (9, 65), -3, 3, 1), uniform("float16", (65, 11), -3, 3)
    a = sl.placeholder((9, 65), "float16", name="A")
    b = sl.placeholder((65, 11), "float16", name="B")
    k = sl.reduce_axis((0, 65), name="k")
    c = sl.compute((9, 11), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    want = np.zeros((9, 11), np.float16)
    for kk in range(65):
        want = want + a_values[:, kk, None] * b_values[None, kk, :]  # float16 ops round
    np.testing.assert_array_equal(sl.evaluate(c, {a: a_values, b: b_values}), want)


@pytest.mark.parametrize("dtype", HALVES)
def test_max_and_min_are_exact_in_any_order(dtype):
    values = uniform(dtype, (6, 333), -50.0, 50.0)
    values[2, 100] = np.nan
    a = sl.placeholder((6, 333), dtype, name="A")
    k, j = sl.reduce_axis((0, 333), name="k"), sl.reduce_axis((0, 333), name="j")
    hi = sl.compute((6,), lambda i: sl.max(a[i, k], axis=k), name="Hi")
    lo = sl.compute((6,), lambda i: sl.min(a[i, j], axis=j), name="Lo")
    got_hi, got_lo = (r.astype(np.float32) for r in sl.reference([hi, lo], {a: values}))
    wide = values.astype(np.float32)  # bfloat16 NaNs compare as NaNs only once widened
    np.testing.assert_array_equal(got_hi, np.max(wide, axis=1))
    np.testing.assert_array_equal(got_lo, np.min(wide, axis=1))
    assert np.isnan(got_hi[2]) and np.isnan(got_lo[2])


def test_float32_is_not_summed_in_order():
    """2**24 then 4096 ones: in order each 2**24 + 1 rounds back to 2**24; numpy's summation
    (the reference's choice for float32) adds the ones together first."""
    values = np.ones((2, 4097), np.float32)
    values[:, 0] = 2.0**24
    a, s = row_sum("float32", 2, 4097)
    got = sl.evaluate(s, {a: values})
    assert np.all(got > 2.0**24)
    np.testing.assert_allclose(got, 2.0**24 + 4096, rtol=1e-6)


def test_precision_float64_accumulates_in_float64():
    a, s = row_sum("float16", 3, 4096)
    result = sl.evaluate(s, {a: np.ones((3, 4096), np.float16)}, precision="float64")
    np.testing.assert_array_equal(result, np.full(3, 4096.0))
