"""cache_read / cache_write / set_scope / storage_align, run through the interpreter."""

from __future__ import annotations

import pytest

import schedlang as sl

from .test_replay import replayed
from .util import check


def matmul(m, n, kk):
    a = sl.placeholder((m, kk), name="A")
    b = sl.placeholder((kk, n), name="B")
    k = sl.reduce_axis((0, kk), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def read_root(s, a, b, c):
    s.cache_read(a, "global", [c])


def read_at_row(s, a, b, c):
    aa = s.cache_read(a, "global", [c])
    s[aa].compute_at(s[c], c.op.axis[0])


def read_at_tile(s, a, b, c):
    aa = s.cache_read(a, "local", [c])
    bb = s.cache_read(b, "local", [c])
    xo, yo, xi, yi = s[c].tile(c.op.axis[0], c.op.axis[1], 4, 3)
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=5)
    s[c].reorder(xo, yo, ko, xi, yi, ki)
    s[aa].compute_at(s[c], ko)
    s[bb].compute_at(s[c], ko)


def write_root(s, a, b, c):
    s.cache_write(c, "global")


def write_at_tile(s, a, b, c):
    """TE opt_gemm's write cache: the block of C is accumulated in a buffer, then copied."""
    cc = s.cache_write(c, "global")
    xo, yo, xi, yi = s[c].tile(c.op.axis[0], c.op.axis[1], 4, 4)
    s[cc].compute_at(s[c], yo)
    xc, yc = s[cc].op.axis
    (k,) = s[cc].op.reduce_axis
    ko, ki = s[cc].split(k, factor=3)
    s[cc].reorder(ko, xc, ki, yc)
    s[cc].unroll(ki)
    s[cc].vectorize(yc)


def write_and_read(s, a, b, c):
    cl = s.cache_write(c, "local")
    aa = s.cache_read(a, "local", [cl])
    io, ii = s[c].split(c.op.axis[0], factor=2)
    s[cl].compute_at(s[c], io)
    s[aa].compute_at(s[cl], s[cl].op.reduce_axis[0])


def read_twice(s, a, b, c):
    a1 = s.cache_read(a, "global", [c])
    a2 = s.cache_read(a1, "local", [c])
    s[a2].compute_at(s[c], c.op.axis[1])


SCHEDULES = [
    read_root,
    read_at_row,
    read_at_tile,
    write_root,
    write_at_tile,
    write_and_read,
    read_twice,
]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("sizes", [(1, 1, 1), (7, 10, 13), (8, 12, 15)], ids=str)
def test_matmul_caches(schedule, sizes):
    a, b, c = matmul(*sizes)
    s = sl.create_schedule(c)
    schedule(s, a, b, c)
    check(s, [a, b], [c])


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
def test_matmul_caches_symbolic(schedule):
    a, b, c = matmul(sl.var("m"), sl.var("n"), 13)
    s = sl.create_schedule(c)
    schedule(s, a, b, c)
    check(s, [a, b], [c], {"m": 9, "n": 7})


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
def test_cache_replay(schedule):
    a, b, c = matmul(sl.var("m"), 7, 13)
    s = sl.create_schedule(c)
    schedule(s, a, b, c)
    again = replayed(s, [a, b, c])
    assert again.describe() == s.describe()
    assert str(sl.lower(again, [a, b, c])) == str(sl.lower(s, [a, b, c]))
    assert str(sl.lower(s.copy(), [a, b, c])) == str(sl.lower(s, [a, b, c]))


def test_cache_stage_axes_are_te_like():
    a, b, c = matmul(8, 8, 8)
    s = sl.create_schedule(c)
    cc = s.cache_write(c, "local")
    aa = s.cache_read(a, "shared", [cc])
    assert [iv.name for iv in s[cc].op.axis] == ["i.c", "j.c"]
    assert s[cc].op.reduce_axis == c.op.reduce_axis
    assert [iv.name for iv in s[aa].op.axis] == ["ax0", "ax1"]
    assert s[c].op.axis == c.op.axis and s[c].op.reduce_axis == ()
    assert [st.name for st in s.stages] == ["A", "A.shared", "B", "C.local", "C"]
    # The user's tensor still names the stage, and its axes still split it.
    s[c].split(c.op.axis[0], factor=2)


def test_cache_read_keeps_other_readers():
    a = sl.placeholder((9,), name="A")
    b = sl.compute((9,), lambda i: a[i] + 1.0, name="B")
    c = sl.compute((9,), lambda i: b[i] * 2.0, name="C")
    d = sl.compute((9,), lambda i: b[i] - c[i], name="D")
    s = sl.create_schedule(d)
    bb = s.cache_read(b, "global", [c])
    s[bb].compute_at(s[c], c.op.axis[0])
    text = str(check(s, [a], [d]))
    assert "B.global" in text and "D[i_2] = B[i_2] - C[i_2]" in text


def test_set_scope_local_at_row():
    m = sl.var("m")
    a = sl.placeholder((m, 6), name="A")
    b = sl.compute((m, 6), lambda i, j: a[i, j] * 3.0, name="B")
    c = sl.compute((m, 6), lambda i, j: b[i, j] + b[i, 5 - j], name="C")
    s = sl.create_schedule(c)
    s[b].compute_at(s[c], c.op.axis[0])
    s[b].set_scope("local")
    text = str(check(s, [a], [c], {"m": 5}))
    assert "allocate B: float32[1, 6] in local" in text


def bound_pipeline(level):
    """B = 2A computed inside C's block loop (level 0) or thread loop (level 1)."""
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((16,), lambda i: b[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=4)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], [bx, tx][level])
    return s, a, b, c


@pytest.mark.parametrize("level, scope", [(0, "shared"), (1, "local")])
def test_scope_inferred_from_binding(level, scope):
    """As in TE: a stage computed inside block loops is shared, inside thread loops local."""
    s, a, b, c = bound_pipeline(level)
    assert f"allocate B: float32[{4 if level == 0 else 1}] in {scope}" in str(sl.lower(s, [a, c]))


def test_global_scope_inside_threads_is_an_error():
    s, a, b, c = bound_pipeline(1)
    s[b].set_scope("global")
    with pytest.raises(sl.ScheduleError, match=r"scope 'global' but is computed inside loops"):
        sl.lower(s, [a, c])


def test_storage_align_pads_rows():
    a, b, c = matmul(8, 8, 10)
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "global", [c])
    xo, xi = s[c].split(c.op.axis[0], factor=4)
    s[aa].compute_at(s[c], xo)
    s[aa].storage_align(s[aa].op.axis[0], 16, 1)
    text = str(check(s, [a, b], [c]))
    assert "allocate A.global: float32[4, 10] in global, strides=[17, 1]" in text
