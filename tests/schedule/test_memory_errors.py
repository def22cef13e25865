"""One test per error message of cache_read, cache_write, set_scope, storage_align, rfactor."""

from __future__ import annotations

import pytest

import schedlang as sl
from schedlang.schedule.errors import (
    AxisError,
    FactorError,
    PlacementError,
    RFactorError,
    ScopeError,
)

from .test_errors import chain, matmul


def test_unknown_scope():
    a, b, c, s = matmul()
    with pytest.raises(ScopeError, match=r"cache_read\(A, 'texture', \[C\]\).*unknown scope"):
        s.cache_read(a, "texture", [c])
    with pytest.raises(ScopeError, match="unknown scope 'regs'"):
        s[c].set_scope("regs")


def test_cache_read_reader_must_read():
    a, b, c, s = matmul()
    with pytest.raises(ScopeError, match="'B' does not read 'A'"):
        s.cache_read(a, "shared", [b])
    with pytest.raises(ScopeError, match="give at least one reader"):
        s.cache_read(a, "shared", [])


def test_cache_write_after_scheduling():
    a, b, c, s = matmul()
    xo, xi = s[c].split(c.op.axis[0], factor=2)
    s[c].unroll(xi)
    with pytest.raises(ScopeError, match="already annotated or bound; call cache_write before"):
        s.cache_write(c, "local")


def test_cache_write_of_input():
    a, b, c, s = matmul()
    with pytest.raises(PlacementError, match="'A' is an input: it is not written"):
        s.cache_write(a, "local")


def test_set_scope_of_output():
    a, b, c, s = chain()
    with pytest.raises(ScopeError, match="'C' is an output.*use s.cache_write"):
        s[c].set_scope("local")


def test_storage_align_errors():
    a, b, c, s = chain()
    with pytest.raises(FactorError, match="need factor > 0 and 0 <= offset < factor"):
        s[b].storage_align(b.op.axis[0], 8, 8)
    with pytest.raises(FactorError, match="offset must be an integer"):
        s[b].storage_align(b.op.axis[0], 8, 1.5)
    bo, bi = s[b].split(b.op.axis[0], factor=2)
    with pytest.raises(AxisError, match=r"storage_align takes an axis of s\[B\].op.axis"):
        s[b].storage_align(bo, 8, 1)
    with pytest.raises(ScopeError, match="'C' is an output: its layout is the caller's"):
        s[c].storage_align(c.op.axis[0], 8, 1)


def test_rfactor_errors():
    a, b, c, s = matmul()
    with pytest.raises(RFactorError, match="'i' is a data axis"):
        s.rfactor(c, c.op.axis[0])
    with pytest.raises(RFactorError, match="factor_axis must be in \\[0, 2\\], got 3"):
        s.rfactor(c, c.op.reduce_axis[0], factor_axis=3)
    s[c].parallel(c.op.axis[0])
    with pytest.raises(RFactorError, match="call rfactor first"):
        s.rfactor(c, c.op.reduce_axis[0])
    a, b, c, s = chain()
    with pytest.raises(RFactorError, match="'C' is not a reduction"):
        s.rfactor(c, c.op.axis[0])


def test_rfactor_axis_split_away():
    a, b, c, s = matmul()
    s[c].split(c.op.reduce_axis[0], factor=2)
    with pytest.raises(AxisError, match="'k' was already split"):
        s.rfactor(c, c.op.reduce_axis[0])


def test_local_stage_cannot_rebind_its_threads():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((16,), lambda i: b[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=4)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], tx)
    s[b].bind(b.op.axis[0], sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.ScheduleError, match="scope 'local' \\(a copy per thread\\)"):
        sl.lower(s, [a, c])


def test_thread_extent_must_be_constant():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    s = sl.create_schedule(b)
    bx, tx = s[b].split(b.op.axis[0], factor=4)
    s[b].bind(bx, sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.ScheduleError, match="symbolic extent, but a thread index needs"):
        sl.lower(s, [a, b])


def test_attached_reduction_carried_by_parallel_loop():
    a = sl.placeholder((6, 8), name="A")
    k = sl.reduce_axis((0, 8), name="k")
    r = sl.compute((6,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    out = sl.compute((6,), lambda i: r[i] * 2.0, name="Out")
    s = sl.create_schedule(out)
    io, ii = s[out].split(out.op.axis[0], factor=2)
    s[r].compute_at(s[out], io)
    with pytest.raises(sl.ScheduleError, match=r"parallel\(k\).*update the same element"):
        s[r].parallel(k)


def test_local_stage_cannot_spread_over_threads():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((16,), lambda i: b[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=4)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].compute_at(s[c], bx)
    s[b].set_scope("local")
    s[b].bind(b.op.axis[0], sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.ScheduleError, match="scope 'local' \\(a copy per thread\\)"):
        sl.lower(s, [a, c])


def test_block_loop_inside_thread_loop():
    a = sl.placeholder((4, 4), name="A")
    b = sl.compute((4, 4), lambda i, j: a[i, j] * 2.0, name="B")
    s = sl.create_schedule(b)
    s[b].bind(b.op.axis[0], sl.thread_axis("threadIdx.x"))
    s[b].bind(b.op.axis[1], sl.thread_axis("blockIdx.x"))
    with pytest.raises(sl.ScheduleError, match="block loops must be outside thread loops"):
        sl.lower(s, [a, b])


def test_shared_stage_outside_the_block_loops():
    a = sl.placeholder((4, 4), name="A")
    b = sl.compute((4, 4), lambda i, j: a[i, j] * 2.0, name="B")
    s = sl.create_schedule(b)
    aa = s.cache_read(a, "shared", [b])
    s[b].bind(b.op.axis[1], sl.thread_axis("blockIdx.x"))
    s[aa].compute_at(s[b], b.op.axis[0])
    with pytest.raises(sl.ScheduleError, match="one copy per block.*outside loop 'j'"):
        sl.lower(s, [a, b])


def test_an_output_may_be_said_to_be_global_and_nothing_else():
    a, b, c, s = matmul()
    s[c].set_scope("global")  # where the caller's array is: nothing changes
    assert "allocate" not in str(sl.lower(s, [a, b, c]))
    with pytest.raises(ScopeError, match="is an output: it lives in the global buffer"):
        s[c].set_scope("shared")
