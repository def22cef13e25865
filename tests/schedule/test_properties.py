"""Random schedules either raise a ScheduleError or lower to code that matches the reference."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlang as sl

from .util import check

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


def random_loops(data, s, stage_tensor):
    """Random splits, a reorder, a fuse of adjacent leaves and annotations on one stage.

    Mistakes that every primitive rejects at once (fusing a reduce loop with a data loop, two
    kinds on one loop) are not drawn, so most examples reach lowering.
    """
    stage = s[stage_tensor]
    for _ in range(data.draw(st.integers(0, 2))):
        leaf = data.draw(st.sampled_from(stage.leaves))
        stage.split(leaf, factor=data.draw(st.integers(1, 9)))
    if data.draw(st.booleans()):
        stage.reorder(*data.draw(st.permutations(stage.leaves)))
    pairs = [k for k in range(len(stage.leaves) - 1) if _same_kind(stage, k)]
    if pairs and data.draw(st.booleans()):
        k = data.draw(st.sampled_from(pairs))
        stage.fuse(stage.leaves[k], stage.leaves[k + 1])
    for _ in range(data.draw(st.integers(0, 2))):
        free = [x for x in stage.leaves if x not in stage.annotations]
        if not free:
            break
        leaf = data.draw(st.sampled_from(free))
        kind = data.draw(st.sampled_from(["unroll", "vectorize", "parallel"]))
        getattr(stage, kind)(leaf)


def matmul(m: int, n: int, k_extent: int):
    a = sl.placeholder((m, k_extent), name="A")
    b = sl.placeholder((k_extent, n), name="B")
    k = sl.reduce_axis((0, k_extent), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def _same_kind(stage, k: int) -> bool:
    return stage.leaves[k].kind == stage.leaves[k + 1].kind


@SETTINGS
@given(data=st.data(), shape=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)))
def test_random_matmul_schedule(data, shape):
    a, b, c = matmul(*shape)
    s = sl.create_schedule(c)
    try:
        random_loops(data, s, c)
        check(s, [a, b], [c])
    except sl.ScheduleError:
        pass


@SETTINGS
@given(data=st.data(), shape=st.tuples(st.integers(1, 9), st.integers(1, 9)))
def test_random_chain_schedule(data, shape):
    a = sl.placeholder(shape, name="A")
    p = sl.compute(shape, lambda i, j: a[i, j] * 3.0, name="P")
    c = sl.compute(shape, lambda i, j: p[i, j] + a[i, j], name="C")
    s = sl.create_schedule(c)
    try:
        random_loops(data, s, c)
        where = data.draw(st.sampled_from(["root", "inline", "at"]))
        if where == "inline":
            s[p].compute_inline()
        elif where == "at":
            s[p].compute_at(s[c], data.draw(st.sampled_from(s[c].leaves)))
            random_loops(data, s, p)
        check(s, [a], [c])
    except sl.ScheduleError:
        pass


@pytest.mark.parametrize("n", [7])
def test_chain_transposed_read_at_leaf(n):
    """A fixed case of the chain property with a transposed producer read."""
    a = sl.placeholder((n, n), name="A")
    p = sl.compute((n, n), lambda i, j: a[j, i] * 3.0, name="P")
    c = sl.compute((n, n), lambda i, j: p[j, i] + 1.0, name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[1], factor=4)
    s[p].compute_at(s[c], xo)
    check(s, [a], [c])


def test_compute_at_inner_of_split_moved_outside():
    """Found by test_random_chain_schedule: isl gives the producer's loop a step of 2."""
    a = sl.placeholder((3, 1), name="A")
    p = sl.compute((3, 1), lambda i, j: a[i, j] * 3.0, name="P")
    c = sl.compute((3, 1), lambda i, j: p[i, j] + a[i, j], name="C")
    s = sl.create_schedule(c)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=1)
    ioo, ioi = s[c].split(io, factor=2)
    s[c].reorder(ioi, ioo, ii, j)
    s[p].compute_at(s[c], ioi)
    check(s, [a], [c])


SCOPES = ["global", "shared", "local"]


def random_caches(data, s, a, b, c):
    """A write cache of C, read caches of A and B, each computed at a random loop or at root,
    with random loops of their own."""
    readers = [c]
    if data.draw(st.booleans()):
        cc = s.cache_write(c, data.draw(st.sampled_from(SCOPES)))
        readers = [cc]
    random_loops(data, s, c)
    if readers[0] is not c:
        if data.draw(st.booleans()):
            s[readers[0]].compute_at(s[c], data.draw(st.sampled_from(s[c].leaves)))
        random_loops(data, s, readers[0])
    for source in (a, b):
        if data.draw(st.booleans()):
            cached = s.cache_read(source, data.draw(st.sampled_from(SCOPES)), readers)
            reader = s[readers[0]]
            if data.draw(st.booleans()):
                s[cached].compute_at(reader, data.draw(st.sampled_from(reader.leaves)))
            random_loops(data, s, cached)


@SETTINGS
@given(data=st.data(), shape=st.tuples(st.integers(1, 7), st.integers(1, 7), st.integers(1, 7)))
def test_random_cached_matmul_schedule(data, shape):
    a, b, c = matmul(*shape)
    s = sl.create_schedule(c)
    try:
        random_caches(data, s, a, b, c)
        check(s, [a, b], [c])
    except sl.ScheduleError:
        pass


@SETTINGS
@given(data=st.data(), shape=st.tuples(st.integers(1, 7), st.integers(1, 13)))
def test_random_rfactor_schedule(data, shape):
    a = sl.placeholder(shape, name="A")
    k = sl.reduce_axis((0, shape[1]), name="k")
    r = sl.compute((shape[0],), lambda i: sl.sum(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    try:
        for _ in range(data.draw(st.integers(0, 2))):
            reduce_leaves = [x for x in s[r].leaves if x.kind == "reduce"]
            s[r].split(
                data.draw(st.sampled_from(reduce_leaves)), factor=data.draw(st.integers(1, 5))
            )
        reduce_leaves = [x for x in s[r].leaves if x.kind == "reduce"]
        rf = s.rfactor(r, data.draw(st.sampled_from(reduce_leaves)), data.draw(st.integers(0, 1)))
        random_loops(data, s, rf)
        random_loops(data, s, r)
        if data.draw(st.booleans()):
            s[rf].compute_at(s[r], data.draw(st.sampled_from(s[r].leaves)))
        check(s, [a], [r])
    except sl.ScheduleError:
        pass


def random_binds(data, s, tensor):
    """Bind one or two leaves of `tensor`'s stage to blocks, threads or a virtual thread."""
    stage = s[tensor]
    tags = ["blockIdx.x", "threadIdx.x", "threadIdx.y", "vthread"]
    for _ in range(data.draw(st.integers(1, 2))):
        free = [x for x in stage.leaves if x not in stage.annotations and x not in stage.binds]
        if not free:
            return
        leaf = data.draw(st.sampled_from(free))
        stage.bind(leaf, sl.thread_axis(data.draw(st.sampled_from(tags))))


@SETTINGS
@given(data=st.data(), shape=st.tuples(st.integers(1, 7), st.integers(1, 7), st.integers(1, 7)))
def test_random_gpu_matmul_schedule(data, shape):
    """Blocks, threads, virtual threads, shared and local caches, cross-thread reductions:
    run by the SIMT interpreter, which also reports races and divergent barriers."""
    a, b, c = matmul(*shape)
    s = sl.create_schedule(c)
    try:
        readers = [c]
        if data.draw(st.booleans()):
            readers = [s.cache_write(c, "local")]
        stage = s[c]
        for _ in range(data.draw(st.integers(0, 2))):
            leaf = data.draw(st.sampled_from(stage.leaves))
            stage.split(leaf, factor=data.draw(st.integers(1, 4)))
        random_binds(data, s, c)
        if readers[0] is not c:
            s[readers[0]].compute_at(stage, data.draw(st.sampled_from(stage.leaves)))
        for source in (a, b):
            if data.draw(st.booleans()):
                scope = data.draw(st.sampled_from(SCOPES[1:]))
                cached = s.cache_read(source, scope, readers)
                reader = s[readers[0]]
                s[cached].compute_at(reader, data.draw(st.sampled_from(reader.leaves)))
                if data.draw(st.booleans()):
                    random_binds(data, s, cached)
                if scope == "shared" and data.draw(st.booleans()):
                    s[cached].double_buffer()
        check(s, [a, b], [c])
    except sl.ScheduleError:
        pass
