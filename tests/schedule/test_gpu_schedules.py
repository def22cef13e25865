"""GPU-style schedules (blocks, threads, shared and local caches) run by the SIMT interpreter.

The interpreter runs each block's threads in lockstep and reports races on shared memory, so
these tests check the placement of shared buffers, the barriers, the thread guards and the
per-thread registers, on sizes that do not divide the tiles.
"""

from __future__ import annotations

import re

import pytest

import schedlang as sl
from schedlang.demo_cuda import te_gpu_gemm
from schedlang.schedule.errors import BindError

from .util import check


def bind(s, tensor, *pairs):
    for axis, tag in pairs:
        s[tensor].bind(axis, sl.thread_axis(tag))


def matmul(m, n, kk):
    a = sl.placeholder((m, kk), name="A")
    b = sl.placeholder((kk, n), name="B")
    k = sl.reduce_axis((0, kk), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def gemm_shared_local(s, a, b, c, tile=4, threads=2, kf=3, fill="bind"):
    """TE's GPU GEMM recipe, small: block tiles, a local accumulator per thread, shared tiles
    of A and B refilled per k step by all threads of the block."""
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    cl = s.cache_write(c, "local")
    i, j = c.op.axis
    by, yi = s[c].split(i, factor=tile)
    bx, xi = s[c].split(j, factor=tile)
    ty, yi = s[c].split(yi, nparts=threads)
    tx, xi = s[c].split(xi, nparts=threads)
    s[c].reorder(by, bx, ty, tx, yi, xi)
    bind(s, c, (by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[cl].compute_at(s[c], tx)
    yc, xc = s[cl].op.axis
    ko, ki = s[cl].split(s[cl].op.reduce_axis[0], factor=kf)
    s[cl].reorder(ko, ki, yc, xc)
    for cache in (aa, bb):
        s[cache].compute_at(s[cl], ko)
        if fill == "bind":
            fused = s[cache].fuse(*s[cache].op.axis)
            t, inner = s[cache].split(fused, nparts=threads * threads)
            fy, fx = s[cache].split(t, nparts=threads)
            bind(s, cache, (fy, "threadIdx.y"), (fx, "threadIdx.x"))
    return aa, bb, cl


@pytest.mark.parametrize("fill", ["bind", "one_thread"])
@pytest.mark.parametrize("sizes", [(8, 8, 6), (9, 7, 10), (1, 5, 1)], ids=str)
def test_gemm_shared_local(sizes, fill):
    a, b, c = matmul(*sizes)
    s = sl.create_schedule(c)
    gemm_shared_local(s, a, b, c, fill=fill)
    text = str(check(s, [a, b], [c]))
    assert "in shared" in text and "in local" in text and "barrier()" in text


def test_gemm_shared_local_symbolic():
    a, b, c = matmul(sl.var("m"), sl.var("n"), 11)
    s = sl.create_schedule(c)
    gemm_shared_local(s, a, b, c, tile=8, threads=4, kf=4)
    func = check(s, [a, b], [c], {"m": 13, "n": 10})
    text = str(func)
    # The shared tiles have constant sizes; each k step refills them after a barrier.
    assert "allocate A.shared: float32[8, 4] in shared" in text
    assert "allocate C.local: float32[2, 2] in local" in text
    assert text.count("barrier()") == 2


def test_shared_buffers_sit_outside_the_k_loop():
    a, b, c = matmul(8, 8, 8)
    s = sl.create_schedule(c)
    gemm_shared_local(s, a, b, c)
    lines = [line.strip() for line in str(sl.lower(s, [a, b, c])).splitlines()]
    alloc = lines.index("allocate A.shared: float32[4, 3] in shared  # 48 bytes")
    loop = next(k for k, line in enumerate(lines) if line.startswith("for k.outer"))
    assert alloc < loop


def transpose(m, n):
    a = sl.placeholder((m, n), name="A")
    t = sl.compute((n, m), lambda i, j: a[j, i], name="T")
    return a, t


@pytest.mark.parametrize("shape", [(8, 8), (13, 6)], ids=str)
def test_transpose_through_shared(shape):
    a, t = transpose(*shape)
    s = sl.create_schedule(t)
    aa = s.cache_read(a, "shared", [t])
    by, bx, ty, tx = s[t].tile(t.op.axis[0], t.op.axis[1], 4, 4)
    bind(s, t, (by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[aa].compute_at(s[t], bx)
    ay, ax = s[aa].op.axis
    bind(s, aa, (ay, "threadIdx.y"), (ax, "threadIdx.x"))
    text = str(check(s, [a], [t]))
    assert "allocate A.shared: float32[4, 4] in shared" in text


def test_row_sum_rfactor_over_threads_then_combined():
    """TE's reduction recipe up to the cross-thread step: partial sums per thread in a
    shared buffer, then combined by one serial loop."""
    a = sl.placeholder((5, 37), name="A")
    k = sl.reduce_axis((0, 37), name="k")
    r = sl.compute((5,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    ko, ki = s[r].split(k, factor=8)
    rf = s.rfactor(r, ki)
    bind(s, r, (s[r].op.axis[0], "blockIdx.x"))
    s[rf].compute_at(s[r], s[r].op.axis[0])
    bind(s, rf, (s[rf].op.axis[0], "threadIdx.x"))
    text = str(check(s, [a], [r]))
    assert "in shared" in text and "barrier()" in text


def test_blur_producer_in_shared_per_block():
    a = sl.placeholder((19,), name="A")
    b = sl.compute((18,), lambda i: a[i] + a[i + 1], name="B")
    c = sl.compute((17,), lambda i: b[i] + b[i + 1], name="C")
    s = sl.create_schedule(c)
    bo, bi = s[c].split(c.op.axis[0], factor=4)
    bind(s, c, (bo, "blockIdx.x"), (bi, "threadIdx.x"))
    s[b].compute_at(s[c], bo)
    s[b].set_scope("shared")
    bx, tx = s[b].split(b.op.axis[0], factor=4)
    bind(s, b, (tx, "threadIdx.x"))
    text = str(check(s, [a], [c]))
    assert "allocate B: float32[5] in shared" in text


@pytest.mark.parametrize("sizes", [(32, 32, 16), (37, 29, 13)], ids=str)
def test_te_gpu_gemm_with_virtual_threads(sizes):
    a, b, c = matmul(*sizes)
    s = sl.create_schedule(c)
    te_gpu_gemm(s, a, b, c, num_thread=4, scale=2, vt=2, kf=4)
    text = str(check(s, [a, b], [c]))
    # Shared tiles are filled once for all virtual threads; registers get a part per vthread.
    assert "allocate A.shared: float32[16, 4] in shared" in text
    assert "allocate C.local: float32[2, 2, 2, 2] in local" in text
    fill = text.index("A.shared[")
    assert "vthread" not in text[text.rindex("for k.outer", 0, fill) : fill]


def row_reduce(m, n, reducer=sl.sum):
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((m,), lambda i: reducer(a[i, k], axis=k), name="B")
    return a, b


@pytest.mark.parametrize("reducer", [sl.sum, sl.max], ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(7, 37), (3, 8), (1, 1)], ids=str)
def test_cross_thread_reduction_with_rfactor(shape, reducer):
    """TE's reduction tutorial: partial results per thread (rfactor), then combined across
    the threads of the reduce axis in one collective."""
    a, b = row_reduce(*shape, reducer)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=16)
    bf = s.rfactor(b, ki)
    xo, xi = s[b].split(s[b].op.axis[0], factor=4)
    tx = s[b].op.reduce_axis[0]
    bind(s, b, (xo, "blockIdx.x"), (xi, "threadIdx.y"), (tx, "threadIdx.x"))
    s[bf].compute_at(s[b], tx)
    text = str(check(s, [a], [b]))
    assert text.count("thread_allreduce") == 1
    assert "allocate B.rf: float32[1, 1] in local" in text


def test_cross_thread_reduction_direct():
    """A reduce axis bound to threadIdx.x straight away: one collective per k.outer step."""
    n = sl.var("n")
    a, b = row_reduce(5, n)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=8)
    bind(s, b, (b.op.axis[0], "blockIdx.x"), (ki, "threadIdx.x"))
    text = str(check(s, [a], [b], {"n": 21}))
    assert "thread_allreduce(sum(red0.partial[0]), max(red0.valid[0])) over threadIdx.x" in text


def test_cross_thread_custom_reducer():
    a = sl.placeholder((4, 19), name="A")
    k = sl.reduce_axis((0, 19), name="k")
    absmax = sl.comm_reducer(lambda x, y: sl.maximum(sl.abs(x), sl.abs(y)), lambda t: 0.0, "absmax")
    b = sl.compute((4,), lambda i: absmax(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b)
    ko, ki = s[b].split(k, factor=4)
    bind(s, b, (b.op.axis[0], "blockIdx.x"), (ki, "threadIdx.x"))
    check(s, [a], [b])


@pytest.mark.parametrize("sizes", [(8, 8, 6), (9, 7, 10), (1, 5, 1), (16, 16, 16)], ids=str)
def test_double_buffered_shared_tiles(sizes):
    """The next k step's tiles are filled while the current ones are read: two copies, one
    barrier per iteration (plus one after the first fill)."""
    a, b, c = matmul(*sizes)
    s = sl.create_schedule(c)
    aa, bb, _ = gemm_shared_local(s, a, b, c)
    s[aa].double_buffer()
    s[bb].double_buffer()
    text = str(check(s, [a, b], [c]))
    if sizes[2] > 3:  # more than one k step
        assert "allocate A.shared: float32[2, 4, 3] in shared" in text
        assert text.count("barrier()") == 2
        assert re.search(r"A\.shared\[k\.outer( % 2)?, ", text)  # % 2 is dropped for 2 steps


def test_double_buffer_needs_a_refill_loop():
    a, b, c = matmul(8, 8, 8)
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "shared", [c])
    s[aa].double_buffer()
    with pytest.raises(sl.ScheduleError, match=r"double_buffer\(\) at .*nothing refills it"):
        sl.lower(s, [a, b, c])


@pytest.mark.parametrize("virtual", [1, 2])
def test_one_virtual_thread_outside_the_block_loops(virtual):
    """TE's tensor-core recipe splits off a vthread loop of extent 1 and leaves it outside the
    block loops: one virtual thread is no loop at all, so it may stand anywhere; two may not."""
    a, b, c = matmul(12, 16, 6)
    s = sl.create_schedule(c)
    i, j = c.op.axis
    yo, ty = s[c].split(i, factor=4 * virtual)
    vy, ty = s[c].split(ty, factor=4)
    xo, tx = s[c].split(j, factor=4)
    s[c].reorder(yo, xo, ty, tx)
    bind(s, c, (yo, "blockIdx.y"), (xo, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[c].bind(vy, sl.thread_axis("vthread"))
    assert [a.name for a in s[c].leaves][:3] == ["i.outer", "i.inner.outer", "j.outer"]
    if virtual == 1:
        check(s, [a, b], [c])
        return
    with pytest.raises(BindError, match="block loops must be outside thread loops"):
        sl.lower(s, [a, b, c])
