"""The unroll limit: nests that would make LLVM run for minutes are refused at once, by name;
nests within it build and compute what the reference does."""

from __future__ import annotations

import time

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.loops.unroll_limit import MAX_UNROLLED
from schedlang.schedule.errors import UnrollSizeError

QUICK = 3.0  # seconds: a refusal must not wait for any compiler


def _refused(s, args, target="cpu", match=""):
    start = time.perf_counter()
    with pytest.raises(UnrollSizeError, match=match):
        sl.build(s, args, target=target)
    assert time.perf_counter() - start < QUICK


def _row_sums(lanes: int, red: int):
    """Row sums of an n x red matrix, rows vectorized by `lanes` (a tail: masked lanes), the
    reduction unrolled. Each lane reads its own row: a gather, emitted lane by lane."""
    n = sl.var("n")
    a = sl.placeholder((n, red), name="A")
    k = sl.reduce_axis((0, red), name="k")
    c = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="C")
    s = sl.create_schedule(c)
    _, inner = s[c].split(c.op.axis[0], factor=lanes)
    s[c].vectorize(inner)
    s[c].unroll(k)
    return s, a, c


def test_a_reduction_unrolled_under_33_gathered_lanes_is_refused_at_once():
    s, a, c = _row_sums(33, 127)
    _refused(
        s,
        [a, c],
        match=(
            r"In schedule for 'C': unroll\(k\) at .*test_unroll_limit.py:\d+: unrolling makes "
            r"33 lanes of i.inner \(vectorized, emitted lane by lane\) x k \(127\) = 4191 copies "
            r"of 1 statement, 4191 statements in all, above the limit of 1024 for one unrolled "
            r"nest .*; split 'k' and unroll only its inner part \(e.g. split\(k, factor=16\), "
            r"then unroll\(k.inner\)\), or leave it a loop"
        ),
    )


def _doubled(rows: int, cols: int):
    a = sl.placeholder((rows, cols), name="A")
    c = sl.compute((rows, cols), lambda i, j: a[i, j] * 2.0, name="C")
    s = sl.create_schedule(c)
    s[c].unroll(c.op.axis[0])
    s[c].unroll(c.op.axis[1])
    return s, [a, c]


def test_two_nested_unrolled_loops_are_refused_at_once():
    _refused(
        *_doubled(127, 127),
        match=(
            r"unroll\(i\) at .*: unrolling makes i \(127\) x j \(127\) = 16129 copies of "
            r"1 statement, 16129 statements in all, above the limit of 1024 .*; split 'i' and "
            r"unroll only its inner part \(e.g. split\(i, factor=8\), then unroll\(i.inner\)\)"
        ),
    )


def test_an_inner_loop_over_the_limit_by_itself_is_not_helped_by_splitting_the_outer():
    _refused(
        *_doubled(2, 1100),
        match=(
            r"i \(2\) x j \(1100\) = 2200 copies .*; unroll fewer of these loops \(leave the "
            r"outer ones loops\), or split them and unroll only their inner parts"
        ),
    )


def test_the_statements_of_the_body_count():
    """Each unrolled copy holds two statements (the compute of B at C's loop, and C's)."""
    n = sl.var("n")
    a = sl.placeholder((n, 600), name="A")
    b = sl.compute((n, 600), lambda i, j: a[i, j] + 1.0, name="B")
    c = sl.compute((n, 600), lambda i, j: b[i, j] * 2.0, name="C")
    s = sl.create_schedule(c)
    s[b].compute_at(s[c], c.op.axis[1])
    s[c].unroll(c.op.axis[1])
    _refused(s, [a, c], match=r"j \(600\) = 600 copies of 2 statements, 1200 statements in all")


def test_the_cuda_target_refuses_loops_it_would_leave_to_llvm():
    """A reduction loop that indexes no register reaches LLVM as a loop with a full-unroll
    hint: it is refused all the same, before any PTX is made (no GPU needed)."""
    n = sl.var("n")
    a = sl.placeholder((n, 2048), name="A")
    k = sl.reduce_axis((0, 2048), name="k")
    c = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="C")
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[c].unroll(k)
    _refused(s, [a, c], "cuda -arch=sm_90", match=r"unroll\(k\) at .*k \(2048\) = 2048 copies")


def test_a_nest_at_the_limit_builds_and_matches_the_reference():
    """k split in two, both parts unrolled: 16 x 64 = 1024 updates, the limit itself."""
    n = sl.var("n")
    a = sl.placeholder((n, MAX_UNROLLED), name="A")
    w = sl.placeholder((MAX_UNROLLED,), name="W")
    k = sl.reduce_axis((0, MAX_UNROLLED), name="k")
    c = sl.compute((n,), lambda i: sl.sum(a[i, k] * w[k], axis=k), name="C")
    s = sl.create_schedule(c)
    ko, ki = s[c].split(k, factor=64)
    s[c].unroll(ko)
    s[c].unroll(ki)
    kernel = sl.build(s, [a, w, c])
    rng = np.random.default_rng(1)
    av = rng.standard_normal((7, MAX_UNROLLED)).astype("float32")
    wv = rng.standard_normal(MAX_UNROLLED).astype("float32")
    cv = np.full(7, np.nan, dtype="float32")
    kernel(av, wv, cv)
    np.testing.assert_allclose(cv, sl.reference(c, {a: av, w: wv}), rtol=1e-4, atol=1e-3)


def test_whole_vectors_do_not_multiply_by_their_lanes():
    """32 contiguous lanes are one vector per copy: 64 copies, well within the limit (the same
    lanes gathered one by one would be 2048)."""
    n = sl.var("n")
    a = sl.placeholder((n, 64), name="A")
    b = sl.placeholder((64, 32), name="B")
    k = sl.reduce_axis((0, 64), name="k")
    c = sl.compute((n, 32), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    s[c].vectorize(c.op.axis[1])
    s[c].unroll(k)
    kernel = sl.build(s, [a, b, c])
    rng = np.random.default_rng(2)
    av = rng.standard_normal((5, 64)).astype("float32")
    bv = rng.standard_normal((64, 32)).astype("float32")
    cv = np.full((5, 32), np.nan, dtype="float32")
    kernel(av, bv, cv)
    np.testing.assert_allclose(cv, sl.reference(c, {a: av, b: bv}), rtol=1e-4, atol=1e-4)
    s, a, c = _row_sums(32, 64)
    _refused(s, [a, c], match=r"32 lanes of i.inner .* x k \(64\) = 2048 copies")
