"""``te.schedule.InferBound``: each loop's range, exact from the placed statements, keyed as
TE code holds the loops; and ``ScheduleOps``, the loop nest of a whole schedule."""

from __future__ import annotations

import pytest

import schedlang.tvm as tvm
from schedlang.loopir.core.nodes import For, Stmt
from schedlang.tvm import te


def _chain(m, n):
    A = te.placeholder((m, n), name="A")
    A1 = te.compute((m, n), lambda i, j: A[i, j] * 2, name="A1")
    A2 = te.compute((m, n), lambda i, j: A1[i, j] + 3, name="A2")
    return A, A1, A2


def test_a_stage_computed_at_a_loop_runs_over_the_box_read_there():
    A, A1, A2 = _chain(te.var("m"), te.var("l"))
    s = te.create_schedule(A2.op)
    xo, yo, xi, yi = s[A2].tile(A2.op.axis[0], A2.op.axis[1], 8, 4)
    s[A1].compute_at(s[A2], yo)
    bounds = tvm.te.schedule.InferBound(s)
    assert isinstance(bounds, tvm.container.Map)
    assert bounds[A1.op.axis[0]].extent.value == 8
    assert bounds[A1.op.axis[1]].extent.value == 4
    assert bounds[A1.op.axis[0]].min.value == 0  # box-relative, as TE's normalized form
    assert bounds[xi].extent.value == 8 and bounds[yi].extent.value == 4


def test_a_stencil_box_counts_its_halo():
    n = te.var("n")
    A = te.compute((n + 2,), lambda i: i * 1.0, name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[A].compute_at(s[B], xo)
    assert tvm.te.schedule.InferBound(s)[A.op.axis[0]].extent.value == 6


def test_symbolic_extents_are_expressions_of_the_sizes():
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((8 * m, l), name="A")
    B = te.compute((8 * m, l), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], 8)
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[xo].extent == m  # the very size, not an expression equal to it
    assert bounds[xi].extent.value == 8
    assert bounds[B.op.axis[1]].extent == l


@pytest.mark.parametrize(
    ("factor", "nparts", "axis", "extent"), [(32, None, 1, 7), (None, 32, 0, 7)]
)
def test_a_split_larger_than_its_loop_runs_the_loop_only(factor, nparts, axis, extent):
    I = te.placeholder((7,), name="I")
    E = te.compute((7,), lambda i: I[i] * 2, name="E")
    s = te.create_schedule(E.op)
    parts = s[E].split(E.op.axis[0], factor=factor, nparts=nparts)
    assert tvm.te.schedule.InferBound(s)[parts[axis]].extent.value == extent


def test_shared_stage_spans_the_threads_of_its_block():
    A, A1, A2 = _chain(te.var("m"), te.var("l"))
    s = te.create_schedule(A2.op)
    s[A1].set_scope("shared")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    xi0, xi1 = s[A2].split(xi, nparts=16)
    s[A2].bind(xi0, te.thread_axis("threadIdx.x"))
    yo, yi = s[A2].split(A2.op.axis[1], 16)
    s[A2].reorder(xo, xi0, yo, xi1, yi)
    s[A1].compute_at(s[A2], yo)
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[A1.op.axis[0]].extent.value == 32  # all 16 threads' rows, not one's 2
    assert bounds[A1.op.axis[1]].extent.value == 16


def test_reduction_and_cache_stages_have_ranges():
    n = 64
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * A[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[CC].compute_at(s[C], jo)
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[CC.op.axis[0]].extent.value == 8
    assert bounds[CC.op.reduce_axis[0]].extent.value == n


def test_schedule_ops_is_the_loop_nest_over_every_input_and_output():
    A, A1, A2 = _chain(16, 12)
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(A2.op.axis[0], 8)
    s[A1].compute_at(s[A2], xo)
    stmt = tvm.te.schedule.ScheduleOps(s, tvm.te.schedule.InferBound(s))
    assert isinstance(stmt, Stmt)
    loops = []
    tvm.tir.stmt_functor.post_order_visit(
        stmt, lambda n: loops.append(n) if isinstance(n, For) else None
    )
    assert sorted(int(f.extent.value) for f in loops) == [2, 8, 8, 12, 12]


def test_a_scan_update_steps_after_the_init():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    result = tvm.te.scan(init, update, state)
    s = te.create_schedule(result.op)
    xo, xi = s[update].split(update.op.axis[1], factor=4)
    bounds = tvm.te.schedule.InferBound(s)
    steps = bounds[update.op.axis[0]]
    assert steps.min.value == 1 and str(steps.extent) == "m - 1"
    assert bounds[init.op.axis[0]].extent.value == 1
    assert bounds[xi].extent.value == 4
