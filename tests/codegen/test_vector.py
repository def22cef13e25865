"""Vectorized loops: vector instructions where the access allows, exact tails, lane reductions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import Binary
from schedlang.loopir.core.nodes import Buffer, For, If, Load, LoweredFunc, Store, seq
from schedlang.runtime.kernel import Kernel
from tests.loopir.nests import loop_var
from tests.loopir.test_semantics import CASES, N

from .elementwise import split_elementwise
from .util import check_cpu


def test_contiguous_access_is_one_vector_load_and_store():
    kernel = Kernel.for_cpu(split_elementwise(sl.compute((N,), CASES["float32 arithmetic"]), 8))
    assert "load <8 x float>" in kernel.llvm_ir
    assert "store <8 x float>" in kernel.llvm_ir
    assert "llvm.masked.store.v8f32" in kernel.llvm_ir  # the tail
    assert "zmm" in kernel.asm or "ymm" in kernel.asm


def _vadd(n, factor):
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] * 2.0 + b[i], name="C")
    s = sl.create_schedule(c)
    _, xi = s[c].split(c.op.axis[0], factor=factor)
    s[c].vectorize(xi)
    return s, a, b, c


@pytest.mark.parametrize("size", [1, 5, 8, 9, 31, 64])
@pytest.mark.parametrize("factor", [4, 8, 16])
def test_tails_are_exact(size, factor):
    s, a, b, c = _vadd(sl.var("n"), factor)
    kernel = sl.build(s, [a, b, c])
    gen = np.random.default_rng(size)
    x, y = gen.random((2, size), dtype=np.float32)
    out = np.full(size + 3, np.nan, np.float32)  # past the end must stay untouched
    kernel(x, y, out[:size])
    np.testing.assert_array_equal(out[:size], x * 2.0 + y)
    assert np.isnan(out[size:]).all()


def test_strided_access_gathers_lane_by_lane():
    a = sl.placeholder((13, 11), name="A")
    t = sl.compute((11, 13), lambda i, j: a[j, i] + 1.0, name="T")
    s = sl.create_schedule(t)
    _, ji = s[t].split(t.op.axis[1], factor=4)
    s[t].vectorize(ji)
    values = {a: np.random.default_rng(0).random((13, 11), dtype=np.float32)}
    check_cpu(s, [a], [t], values, [sl.evaluate(t, values)])


_REDUCERS = {
    "+": (0.0, np.sum),
    "*": (1.0, np.prod),
    "max": (float("-inf"), np.max),
    "min": (float("inf"), np.min),
}


@pytest.mark.parametrize("op", sorted(_REDUCERS))
def test_reduction_across_lanes(op):
    """``R[i] = R[i] op A[i, k]`` with k vectorized (and a tail guard): one lane reduction per
    vector, as loop IR can express it (the schedule layer rejects vectorizing a reduce axis)."""
    n = sl.var("n")
    A, R = Buffer("A", (sl.const(5), n), "float32"), Buffer("R", (sl.const(5),), "float32")
    i, ko, ki = loop_var("i"), loop_var("k.outer"), loop_var("k.inner")
    k = ko * 8 + ki
    update = Store(
        R, (i,), Binary(op, Load(R, (i,), "float32"), Load(A, (i, k), "float32"), "float32")
    )
    body = seq(
        Store(R, (i,), sl.const(_REDUCERS[op][0], "float32")),
        For(
            ko,
            sl.const(0),
            (n + 7) // 8,
            "serial",
            For(ki, sl.const(0), sl.const(8), "vectorized", If(k < n, update)),
        ),
    )
    func = LoweredFunc("reduce", (A, R), (n,), For(i, sl.const(0), sl.const(5), "serial", body))
    kernel = Kernel.for_cpu(func)
    assert "llvm.vector.reduce" in kernel.llvm_ir
    a = np.random.default_rng(1).uniform(0.9, 1.1, (5, 21)).astype(np.float32)
    r = np.full(5, np.nan, np.float32)
    kernel(a, r)
    np.testing.assert_allclose(r, _REDUCERS[op][1](a, axis=1), rtol=1e-5)


def test_guarded_padding_read_under_a_lane_mask():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: sl.if_then_else(i >= 1, a[i - 1], 0.0) + a[i], name="C")
    s = sl.create_schedule(c)
    _, xi = s[c].split(c.op.axis[0], factor=8)
    s[c].vectorize(xi)
    values = {a: np.random.default_rng(2).random(19, dtype=np.float32)}
    check_cpu(s, [a], [c], values, [sl.evaluate(c, values)])


def _plus_one():
    m = sl.placeholder((8, 50), name="M")
    r = sl.compute((8, 50), lambda i, j: m[i, j] + 1.0, name="R")
    return m, r, sl.create_schedule(r)


def test_a_vectorized_loop_that_must_run_as_scalars_says_why():
    """Same results, slower code: a warning at the user's line, naming the loop and the reason."""
    m, r, s = _plus_one()
    s[r].vectorize(r.op.axis[0])
    with pytest.warns(
        sl.SchedlangWarning,
        match="loop i is vectorized, but its body holds the loop j, so it runs as a scalar loop",
    ) as caught:
        kernel = sl.build(s, [m, r])
    assert caught[0].filename == __file__
    m_np = np.random.default_rng(0).uniform(-1, 1, (8, 50)).astype(np.float32)
    out = np.full((8, 50), np.nan, np.float32)
    kernel(m_np, out)
    np.testing.assert_allclose(out, m_np + 1.0)


def test_an_innermost_vectorized_loop_gives_no_warning():
    m, r, s = _plus_one()
    jo, ji = s[r].split(r.op.axis[1], factor=8)
    s[r].vectorize(ji)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sl.SchedlangWarning)
        kernel = sl.build(s, [m, r])
    assert "<8 x float>" in kernel.llvm_ir


@pytest.mark.parametrize(("divisor", "loads"), [(4, 1), (8, 1), (3, 2)])
def test_a_quotient_that_stays_in_one_bucket_over_the_lanes_is_read_once(divisor, loads):
    """``A[(2 i + l) // m]`` over two lanes: with m a multiple of 2 both lanes read one
    element (a scalar load), with m = 3 they may read two (lane by lane); right either way."""
    a = sl.placeholder((40,), name="A")
    b = sl.compute((37, 2), lambda i, lane: a[(2 * i + lane) // divisor] * 3.0, name="B")
    s = sl.create_schedule(b)
    s[b].vectorize(b.op.axis[1])
    kernel = sl.build(s, [a, b])
    assert kernel.llvm_ir.count("load float") == loads
    assert "store <2 x float>" in kernel.llvm_ir
    values = {a: np.random.default_rng(1).random(40, dtype=np.float32)}
    check_cpu(s, [a], [b], values, [sl.evaluate(b, values)])
