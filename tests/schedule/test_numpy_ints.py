"""Numpy integers (and anything with ``__index__``) are accepted wherever a Python int is, and
act as one; bools and floats, numpy's included, are still refused with the usual messages."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import AlgorithmError
from schedlang.schedule.errors import FactorError, RFactorError

INTS = [np.int32, np.int64, np.uint8]


class Five:
    """Not a number type at all, but an index as far as Python is concerned."""

    def __index__(self) -> int:
        return 5


def _check(s, inputs, output, sizes) -> None:
    """Built on the CPU, run on random data (the output poisoned first): the reference."""
    kernel = sl.build(s, [*inputs, output])
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape).astype("float32") for shape in sizes[:-1]]
    out = np.full(sizes[-1], np.nan, dtype="float32")
    kernel(*arrays, out)
    expected = sl.reference(output, dict(zip(inputs, arrays)))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def _scaled(n: object = None, m: int = 7):
    n = sl.var("n") if n is None else n
    a = sl.placeholder((n, m), name="A")
    b = sl.compute((n, m), lambda i, j: a[i, j] * 2.0 + 1.0, name="B")
    return a, b


@pytest.mark.parametrize("kind", INTS)
def test_split_factor_and_nparts(kind):
    a, b = _scaled()
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], factor=kind(5))
    s[b].split(b.op.axis[1], nparts=kind(3))
    s[b].unroll(inner)
    assert "axis[0], factor=5)" in s.describe()  # the record holds a Python int
    assert type(s.records[0].factor) is int
    _check(s, [a], b, [(13, 7), (13, 7)])


@pytest.mark.parametrize("kind", INTS)
def test_tile_factors(kind):
    a, b = _scaled()
    s = sl.create_schedule(b)
    s[b].tile(b.op.axis[0], b.op.axis[1], kind(4), kind(3))
    _check(s, [a], b, [(11, 7), (11, 7)])


def test_an_object_with_index_is_a_factor():
    a, b = _scaled()
    s = sl.create_schedule(b)
    s[b].split(b.op.axis[0], factor=Five())
    assert s.records[0].factor == 5
    _check(s, [a], b, [(12, 7), (12, 7)])


@pytest.mark.parametrize("bad", [np.float64(5.0), True, np.bool_(True), 5.0])
def test_floats_and_bools_are_not_factors(bad):
    a, b = _scaled()
    s = sl.create_schedule(b)
    with pytest.raises(FactorError, match=r"factor must be a positive integer, got"):
        s[b].split(b.op.axis[0], factor=bad)
    with pytest.raises(FactorError, match=r"nparts must be a positive integer, got"):
        s[b].split(b.op.axis[0], nparts=bad)
    with pytest.raises(FactorError, match=r"y_factor must be a positive integer, got"):
        s[b].tile(b.op.axis[0], b.op.axis[1], 2, bad)


def test_a_numpy_zero_is_still_not_a_positive_factor():
    a, b = _scaled()
    s = sl.create_schedule(b)
    with pytest.raises(FactorError, match=r"factor must be a positive integer, got 0"):
        s[b].split(b.op.axis[0], factor=np.int64(0))


def _chain():
    n = sl.var("n")
    a = sl.placeholder((n, 9), name="A")
    b = sl.compute((n, 9), lambda i, j: a[i, j] + 1.0, name="B")
    c = sl.compute((n, 9), lambda i, j: b[i, j] * 3.0, name="C")
    return a, b, c, sl.create_schedule(c)


@pytest.mark.parametrize("kind", INTS)
def test_storage_align(kind):
    a, b, c, s = _chain()
    s[b].storage_align(b.op.axis[0], kind(16), kind(1))
    assert s[b].align == {0: (16, 1)}
    assert all(type(v) is int for v in s[b].align[0])
    _check(s, [a], c, [(5, 9), (5, 9)])


@pytest.mark.parametrize("bad", [np.float64(8.0), True])
def test_storage_align_refuses_floats_and_bools(bad):
    a, b, c, s = _chain()
    with pytest.raises(FactorError, match=r"factor must be an integer, got"):
        s[b].storage_align(b.op.axis[0], bad, 1)
    with pytest.raises(FactorError, match=r"offset must be an integer, got"):
        s[b].storage_align(b.op.axis[0], 8, bad)


def _row_sums():
    n = sl.var("n")
    a = sl.placeholder((n, 24), name="A")
    k = sl.reduce_axis((0, 24), name="k")
    b = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    return a, b, k


@pytest.mark.parametrize("kind", INTS)
def test_rfactor_factor_axis(kind):
    a, b, k = _row_sums()
    s = sl.create_schedule(b)
    _, ki = s[b].split(k, factor=kind(4))
    bf = s.rfactor(b, ki, factor_axis=kind(1))
    assert [str(e) for e in bf.shape] == ["n", "4"]  # the factored axis second
    assert "factor_axis=1" in s.describe()
    _check(s, [a], b, [(6, 24), (6,)])


@pytest.mark.parametrize("bad", [np.float64(1.0), True])
def test_rfactor_refuses_a_float_or_bool_factor_axis(bad):
    a, b, k = _row_sums()
    s = sl.create_schedule(b)
    _, ki = s[b].split(k, factor=4)
    with pytest.raises(RFactorError, match=r"factor_axis must be an integer, got"):
        s.rfactor(b, ki, factor_axis=bad)


@pytest.mark.parametrize("kind", INTS)
def test_shapes_and_reduce_axes(kind):
    a = sl.placeholder((kind(6), kind(10)), name="A")
    k = sl.reduce_axis((kind(2), kind(10)), name="k")
    r = sl.reduce_axis(kind(6), name="r")
    b = sl.compute((kind(6),), lambda i: sl.sum(a[i, k], axis=k), name="B")
    c = sl.compute((kind(6),), lambda i: sl.sum(a[r, i] * b[r], axis=r), name="C")
    assert [e.value for e in a.shape] == [6, 10]
    assert all(type(e.value) is int and e.dtype == "int32" for e in a.shape)
    assert {k.var.dtype, r.var.dtype, b.op.axis[0].var.dtype} == {"int32"}
    assert str(k.dom) == "[2, 10)"
    s = sl.create_schedule(c)
    _check(s, [a], c, [(6, 10), (6,)])


@pytest.mark.parametrize("bad", [np.float64(5.0), True])
def test_shapes_and_reduce_axes_refuse_floats_and_bools(bad):
    with pytest.raises(AlgorithmError, match=r"dimension 0 of 'A' is .*; sizes must be integers"):
        sl.placeholder((bad,), name="A")
    with pytest.raises(AlgorithmError, match=r"the extent of reduce_axis 'k' is .*integers"):
        sl.reduce_axis(bad, name="k")


@pytest.mark.parametrize("kind", INTS)
def test_const_and_arithmetic_take_numpy_ints_as_python_ints(kind):
    n = sl.var("n")
    one = sl.const(kind(3))
    assert (one.value, one.dtype, type(one.value)) == (3, "int32", int)
    assert sl.const(kind(3), "int64").dtype == "int64"
    assert (n + kind(5)).dtype == "int32"
    assert (kind(5) + n).dtype == "int32"
    assert (kind(2) * sl.var("m", dtype="int64")).dtype == "int64"
    x = sl.placeholder((4,), "int8", name="X")
    assert (x[0] + kind(1)).dtype == "int8"  # as x[0] + 1: the literal takes x's dtype


def test_a_numpy_int_in_an_index_and_an_expression():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n - np.int64(1),), lambda i: a[i + np.int64(1)] * np.int32(3), name="B")
    assert b.op.expr.dtype == "float32"
    s = sl.create_schedule(b)
    _check(s, [a], b, [(9,), (8,)])


@pytest.mark.parametrize("kind", INTS)
def test_a_size_given_by_name_at_call_time(kind):
    n = sl.var("n")
    a = sl.placeholder((4,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i], axis=k), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    x = np.random.default_rng(4).random(4, dtype=np.float32)
    out = np.full(4, np.nan, np.float32)
    kernel(x, out, n=kind(3))
    np.testing.assert_allclose(out, sl.evaluate(b, {a: x}, sizes={n: 3}), rtol=1e-6)


@pytest.mark.parametrize("bad", [np.float64(3.0), True, 3.5])
def test_a_size_given_by_name_refuses_floats_and_bools(bad):
    n = sl.var("n")
    a = sl.placeholder((4,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i], axis=k), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match=r"size 'n' of kernel 'main' is .*, not an integer; pass"):
        kernel(x, np.empty_like(x), n=bad)


@pytest.mark.parametrize("kind", INTS)
def test_a_size_given_to_the_reference(kind):
    n = sl.var("n")
    a = sl.placeholder((4,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i], axis=k), name="B")
    x = np.random.default_rng(5).random(4, dtype=np.float32)
    np.testing.assert_allclose(sl.evaluate(b, {a: x}, sizes={n: kind(3)}), 3 * x, rtol=1e-6)


@pytest.mark.parametrize("bad", [np.float64(3.0), True, 3.5])
def test_a_size_given_to_the_reference_refuses_floats_and_bools(bad):
    n = sl.var("n")
    a = sl.placeholder((4,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i], axis=k), name="B")
    with pytest.raises(TypeError, match=r"size 'n' is given as .*; a size is an integer"):
        sl.evaluate(b, {a: np.ones(4, np.float32)}, sizes={n: bad})
