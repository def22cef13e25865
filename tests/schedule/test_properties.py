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
    """Random splits, a reorder, a fuse of adjacent leaves and annotations on one stage."""
    stage = s[stage_tensor]
    for _ in range(data.draw(st.integers(0, 2))):
        leaf = data.draw(st.sampled_from(stage.leaves))
        stage.split(leaf, factor=data.draw(st.integers(1, 9)))
    if data.draw(st.booleans()):
        stage.reorder(*data.draw(st.permutations(stage.leaves)))
    if len(stage.leaves) > 1 and data.draw(st.booleans()):
        k = data.draw(st.integers(0, len(stage.leaves) - 2))
        stage.fuse(stage.leaves[k], stage.leaves[k + 1])
    for _ in range(data.draw(st.integers(0, 2))):
        leaf = data.draw(st.sampled_from(stage.leaves))
        kind = data.draw(st.sampled_from(["unroll", "vectorize", "parallel"]))
        getattr(stage, kind)(leaf)


@SETTINGS
@given(data=st.data(), shape=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9)))
def test_random_matmul_schedule(data, shape):
    m, n, k_extent = shape
    a = sl.placeholder((m, k_extent), name="A")
    b = sl.placeholder((k_extent, n), name="B")
    k = sl.reduce_axis((0, k_extent), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
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
