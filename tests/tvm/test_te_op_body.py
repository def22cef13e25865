"""TE's ``op.body`` (the list of each output's expression) and what rfactor makes, read as TE
code reads them: the factored op's reductions over the op's own IterVars where they were left
alone and over the split loops' variables, and results against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.ir.expr import Reduce
from schedlang.schedule.errors import RFactorError
from schedlang.tvm import te


def test_body_is_the_list_of_the_outputs_expressions():
    n = te.size_var("n")
    a = te.placeholder((n, 3), name="A")
    k = te.reduce_axis((0, 3), name="k")
    total = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="S")
    (expr,) = total.op.body
    assert isinstance(expr, Reduce) and expr is total.op.expr
    assert expr.axis == (k,) and expr.combiner.name == "sum"
    doubled, tripled = te.compute((n, 3), lambda i, j: (a[i, j] * 2, a[i, j] * 3), name="T")
    assert doubled.op.body == tripled.op.body
    assert [str(e) for e in doubled.op.body] == ["A[i, j] * 2.0", "A[i, j] * 3.0"]
    s = te.create_schedule(doubled.op)
    s.cache_read(a, "local", [doubled])
    assert str(s[doubled].op.body[0]) == "A.local[i, j] * 2.0"  # the op's own, as rewired
    idx = te.placeholder((n, 3), name="I", dtype="int32")
    argmax = te.comm_reducer(
        lambda x, y: (te.if_then_else(x[1] >= y[1], x[0], y[0]), te.max(x[1], y[1])),
        lambda t0, t1: (tvm.tir.const(-1, t0), te.min_value(t1)),
        name="argmax",
    )
    best, value = te.compute((n,), lambda i: argmax((idx[i, k], a[i, k]), axis=k), name="M")
    parts = best.op.body
    assert len(parts) == 2 and all(isinstance(p, Reduce) for p in parts)
    assert [p.value_index for p in parts] == [0, 1] and parts == value.op.body


def _sum_3d():
    n = te.size_var("n")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    a = te.placeholder((n, n, n), name="A")
    b = te.compute((n,), lambda i: te.sum(a[i, k1, k2], axis=[k1, k2]), name="B")
    return n, k1, k2, a, b


def test_rfactor_keeps_the_reduce_axes_it_leaves_alone():
    n, k1, k2, a, b = _sum_3d()
    s = te.create_schedule(b.op)
    bf = s.rfactor(b, k1)
    assert tuple(bf.shape) == (n, n)
    (factored,) = bf.op.body
    assert factored.axis == (k2,)  # the op's own IterVar, as the user holds it
    (combined,) = s[b].op.body
    assert combined.axis[0].dom.extent is n
    assert len(s[b].all_iter_vars) == 2


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_of_a_split_reduces_over_the_loops_split_off(factor_axis):
    """The factored op reduces over the reduce axes left alone, then the loops split off the
    factored one, TE's order; splits of the data axes made before rfactor are dropped (both
    stages start afresh, as in TE), and the result is still the sum."""
    n, k1, k2, a, b = _sum_3d()
    s = te.create_schedule(b.op)
    ko, ki = s[b].split(k1, factor=4)
    s[b].split(b.op.axis[0], factor=8)
    bf = s.rfactor(b, ki, factor_axis)
    assert bf.shape[factor_axis].value == 4 and bf.shape[1 - factor_axis] is n
    (factored,) = bf.op.body
    assert factored.axis[0] == k2 and factored.axis[1].var is ko.var
    assert s[b].op.body[0].axis[0].dom.extent.value == 4
    func = tvm.build(s, [a, b])
    x = np.random.default_rng(5).uniform(0.5, 1.5, (13, 13, 13)).astype("float32")
    got = tvm.nd.array(np.full(13, np.nan, "float32"))
    func(tvm.nd.array(x), got)
    np.testing.assert_allclose(got.numpy(), x.sum(axis=(1, 2)), rtol=1e-5)


def test_a_loop_keeps_its_variable():
    """A loop's variable is the same however often it is asked for, and in a copy of the
    schedule, where the loop the user holds names the same loop."""
    a = sl.placeholder((10,), name="A")
    b = sl.compute((10,), lambda i: a[i] * 2, name="B")
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], factor=4)
    first = outer.var
    assert s[b].leaf_iter_vars[0].var is first
    assert first is not inner.var
    assert outer.var.name == "i.outer" and outer.var.dtype == "int32"
    copied_outer, _ = s.copy()[b].leaf_iter_vars
    assert copied_outer.var is outer.var


def test_rfactor_still_refuses_a_loop_fusing_data_and_reduce_axes():
    n, k1, k2, a, b = _sum_3d()
    s = te.create_schedule(b.op)
    fused = s[b].fuse(b.op.axis[0], k1)
    with pytest.raises(RFactorError, match="or of its data axes, which rfactor drops"):
        s.rfactor(b, fused)


def test_a_reduce_axis_left_alone_keeps_its_range():
    """The factored op sums over the untouched axis's own range (here from 2), unshifted."""
    n = sl.var("n")
    a = sl.placeholder((n, n, n), name="A")
    k1, k2 = sl.reduce_axis((1, n), name="k1"), sl.reduce_axis((2, n), name="k2")
    b = sl.compute((n,), lambda i: sl.sum(a[i, k1, k2], axis=[k1, k2]), name="B")
    s = sl.create_schedule(b)
    _, inner = s[b].split(k1, factor=3)
    factored = s.rfactor(b, inner)
    assert factored.op.reduce_axis[0] is k2
    kernel = sl.build(s, [a, b])
    x = np.random.default_rng(3).uniform(0.5, 1.5, (11, 11, 11)).astype("float32")
    got = np.full(11, np.nan, "float32")
    kernel(x, got)
    np.testing.assert_allclose(got, sl.reference(b, {a: x}), rtol=1e-5)
