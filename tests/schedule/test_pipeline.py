"""pipeline(stages): shared tiles filled by asynchronous copies, stages - 1 steps ahead.

The SIMT interpreter models the copies as landing only at the wait that covers their group,
and reports a read of memory that a copy in flight is writing; so these tests check the waits
and barriers the pass places, on sizes that do not divide the tiles.
"""

from __future__ import annotations

import re

import pytest

import schedlang as sl

from .test_gpu_schedules import gemm_shared_local, matmul
from .util import check


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("sizes", [(8, 8, 6), (9, 7, 10), (1, 5, 1), (16, 16, 23)], ids=str)
def test_pipelined_shared_tiles(sizes, stages):
    a, b, c = matmul(*sizes)
    s = sl.create_schedule(c)
    aa, bb, _ = gemm_shared_local(s, a, b, c)
    s[aa].pipeline(stages)
    s[bb].pipeline(stages)
    text = str(check(s, [a, b], [c]))
    if -(-sizes[2] // 3) > 1:  # more than one k step
        assert f"allocate A.shared: float32[{stages}, 4, 3] in shared" in text
        assert f"async_wait(pending={stages - 2})" in text
        assert text.count("async_commit()") == stages  # the prologue's and the loop's
        assert re.search(rf"A\.shared\[\(k\.outer \+ {stages - 1}\) % {stages}, ", text)


def test_pipelined_symbolic_sizes():
    a, b, c = matmul(sl.var("m"), sl.var("n"), 11)
    s = sl.create_schedule(c)
    aa, bb, _ = gemm_shared_local(s, a, b, c, tile=8, threads=4, kf=4)
    s[aa].pipeline(3)
    s[bb].pipeline(3)
    text = str(check(s, [a, b], [c], {"m": 13, "n": 10}))
    assert "= async_copy(A[" in text


def test_pipeline_replays_from_its_text():
    a, b, c = matmul(8, 8, 6)
    s = sl.create_schedule(c)
    aa, _, _ = gemm_shared_local(s, a, b, c)
    s[aa].pipeline(3)
    assert "s[A_shared].pipeline(stages=3)" in str(s)
    assert str(sl.lower(s.copy(), [a, b, c])) == str(sl.lower(s, [a, b, c]))


def test_the_number_of_stages_is_checked_at_the_call():
    a, b, c = matmul(8, 8, 6)
    s = sl.create_schedule(c)
    aa, _, _ = gemm_shared_local(s, a, b, c)
    with pytest.raises(sl.ScheduleError, match=r"stages must be an integer >= 2, got 1"):
        s[aa].pipeline(1)
    s[aa].double_buffer()
    with pytest.raises(sl.ScheduleError, match=r"double buffered already"):
        s[aa].pipeline(2)


def test_who_issues_the_copy_engines_copies_is_checked_at_the_call():
    a, b, c = matmul(8, 8, 6)
    s = sl.create_schedule(c)
    aa, _, _ = gemm_shared_local(s, a, b, c)
    with pytest.raises(sl.ScheduleError, match=r"warp_specialize must be True or False, got 0"):
        s[aa].pipeline(3, tma=True, warp_specialize=0)
    with pytest.raises(sl.ScheduleError, match=r"asynchronous copies without it are issued"):
        s[aa].pipeline(3, warp_specialize=False)
    s[aa].pipeline(3, tma=True, warp_specialize=False)
    assert "s[A_shared].pipeline(stages=3, tma=True, warp_specialize=False)" in str(s)
    assert "s[A_shared].pipeline(stages=3, tma=True, warp_specialize=False)" in str(s.copy())


def test_a_pipeline_needs_a_refill_loop():
    a, b, c = matmul(8, 8, 8)
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "shared", [c])
    s[aa].pipeline(3)
    with pytest.raises(sl.ScheduleError, match=r"pipeline\(stages=3\) at .*nothing refills it"):
        sl.lower(s, [a, b, c])


def test_a_copy_of_two_bytes_is_refused():
    a = sl.placeholder((16, 16), "float16", name="A")
    b = sl.placeholder((16, 16), "float16", name="B")
    k = sl.reduce_axis((0, 16), name="k")
    c = sl.compute((16, 16), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    aa, _, _ = gemm_shared_local(s, a, b, c)
    s[aa].pipeline(3)
    with pytest.raises(sl.LoweringError, match=r"each copy moves 2 bytes .* vectorize the copy"):
        sl.lower(s, [a, b, c])


def test_a_computed_fill_is_refused():
    a, b, c0 = matmul(8, 8, 6)
    d = sl.compute((8, 8), lambda i, j: c0[i, j] * 2.0, name="D")
    s = sl.create_schedule(d)
    s[c0].set_scope("shared")
    i, j = d.op.axis
    io, ii = s[d].split(i, factor=4)
    s[d].bind(io, sl.thread_axis("blockIdx.x"))
    s[d].bind(ii, sl.thread_axis("threadIdx.x"))
    s[c0].compute_at(s[d], j)
    s[c0].pipeline(2)
    with pytest.raises(sl.LoweringError, match=r"pipeline\(stages=2\) of 'C'"):
        sl.lower(s, [a, b, d])


def test_a_pipeline_fills_shared_memory():
    a, b, c = matmul(8, 8, 6)
    s = sl.create_schedule(c)
    aa, _, cl = gemm_shared_local(s, a, b, c)
    al = s.cache_read(aa, "local", [cl])
    s[al].compute_at(s[cl], s[cl].leaves[0])  # k.outer
    s[al].pipeline(2)
    with pytest.raises(sl.ScheduleError, match=r"asynchronous copies fill shared memory"):
        sl.lower(s, [a, b, c])


@pytest.mark.parametrize("n", [20, 24, 13])
def test_vectorized_copies_of_a_box_cut_by_the_edge(n):
    """16-byte copies of 4 floats; where the tile overhangs the tensor, the copy reads the
    clamped indices of the box fill, whose lanes are still consecutive (n = 13: not a multiple
    of 4, each lane keeps its guard, and each float is a copy of its own)."""
    a, b, c = matmul(12, n, 24)
    s = sl.create_schedule(c)
    bb = s.cache_read(b, "shared", [c])
    cl = s.cache_write(c, "local")
    i, j = c.op.axis
    by, ty = s[c].split(i, factor=4)
    bx, tx = s[c].split(j, factor=8)
    s[c].reorder(by, bx, ty, tx)
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[c].bind(axis, sl.thread_axis(tag))
    s[cl].compute_at(s[c], tx)
    ko, _ = s[cl].split(s[cl].op.reduce_axis[0], factor=4)
    s[bb].compute_at(s[cl], ko)
    rows, cols = s[bb].op.axis
    vo, vi = s[bb].split(cols, factor=4)
    s[bb].bind(rows, sl.thread_axis("threadIdx.y"))
    s[bb].bind(vo, sl.thread_axis("threadIdx.x"))
    s[bb].vectorize(vi)
    s[bb].pipeline(3)
    text = str(check(s, [a, b], [c]))
    assert (":+4] = async_copy(B[" in text) == (n % 4 == 0)
    assert "= async_copy(B[" in text


@pytest.mark.parametrize("stages", [2, 3])
def test_a_padded_copy_is_pipelined_with_zeros_for_the_padding(stages):
    """A copy of ``if_then_else(cond, A[...], 0)`` is an asynchronous copy that writes zeros
    where the condition is false and reads nothing there (cp.async's zero fill): the padding
    of a convolution's data, inlined into its shared tile."""
    m, n, kk = 9, 7, 10
    a = sl.placeholder((m, kk), name="A")
    b = sl.placeholder((kk, n), name="B")
    shifted = sl.compute(
        (m, kk),
        lambda i, j: sl.if_then_else(i >= 2, a[i - 2, j], sl.const(0.0, "float32")),
        name="Apad",
    )
    k = sl.reduce_axis((0, kk), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(shifted[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    s[shifted].compute_inline()
    aa, bb, _ = gemm_shared_local(s, shifted, b, c)
    s[aa].pipeline(stages)
    s[bb].pipeline(stages)
    text = str(check(s, [a, b], [c]))
    assert re.search(r"Apad\.shared\[.*\] = async_copy\(A\[.*\]\) if .* else zeros", text)


def test_padding_that_varies_within_a_vector_is_refused():
    m, n, kk = 8, 8, 16
    a = sl.placeholder((m, kk), name="A")
    b = sl.placeholder((kk, n), name="B")
    ragged = sl.compute(
        (m, kk),
        lambda i, j: sl.if_then_else(j >= 1, a[i, j - 1], sl.const(0.0, "float32")),
        name="Apad",
    )
    k = sl.reduce_axis((0, kk), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(ragged[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    s[ragged].compute_inline()
    aa, _, cl = gemm_shared_local(s, ragged, b, c, kf=8, fill="none")
    rows, cols = s[aa].op.axis
    s[aa].bind(rows, sl.thread_axis("threadIdx.y"))
    _, vector = s[aa].split(cols, factor=4)
    s[aa].vectorize(vector)
    s[aa].pipeline(2)
    with pytest.raises(sl.LoweringError, match="padding condition differs between the lanes"):
        sl.lower(s, [a, b, c])
