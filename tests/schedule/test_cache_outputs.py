"""cache_write of all the outputs of a multi-output compute at once: one cache stage computes
them together; checked against the reference, also for a reduction over tuples."""

from __future__ import annotations

import pytest

import schedlang as sl
from schedlang.errors import ScheduleError
from tests.schedule.util import check


def _pair():
    m, n = sl.var("m"), sl.var("n")
    A = sl.placeholder((m, n), name="A")
    F, E = sl.compute((m, n), lambda i, j: (A[i, j] + 1, A[i, j] * 2), name="F")
    return A, F, E


def test_the_outputs_are_cached_together_and_computed_in_a_tile():
    A, F, E = _pair()
    s = sl.create_schedule([F, E])
    FL, EL = s.cache_write([F, E], "local")
    assert s[FL] is s[EL] and s[F] is s[E]
    xo, xi = s[F].split(F.op.axis[0], factor=4)
    s[FL].compute_at(s[F], xo)
    check(s, [A], [F, E], {"m": 9, "n": 5})
    assert str(sl.lower(s.copy(), [A, F, E])) == str(sl.lower(s, [A, F, E]))


def test_a_reduction_over_tuples_is_cached_whole():
    m, n = sl.var("m"), sl.var("n")
    A = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")

    def combine(x, y):
        keep = x[1] >= y[1]
        return sl.select(keep, x[0], y[0]), sl.select(keep, x[1], y[1])

    def identity(t0, t1):
        return sl.const(-1, t0), sl.min_value(t1)

    argmax = sl.comm_reducer(combine, identity, name="argmax")
    index, value = sl.compute(
        (m,), lambda i: argmax((k.var.astype("float32"), A[i, k]), axis=k), name="R"
    )
    s = sl.create_schedule([index, value])
    IL, VL = s.cache_write([index, value], "global")
    assert len(s[IL].op.reduce_axis) == 1
    check(s, [A], [index, value], {"m": 6, "n": 7})


def test_only_all_the_outputs_of_one_stage_are_cached_together():
    A, F, E = _pair()
    G = sl.compute(F.shape, lambda i, j: F[i, j] - E[i, j], name="G")
    s = sl.create_schedule(G)
    with pytest.raises(ScheduleError, match="all the outputs of one stage"):
        s.cache_write([F, G], "global")
    with pytest.raises(ScheduleError, match="applies to a stage with one output"):
        s.cache_write(F, "global")


def test_outputs_a_cache_read_rewired_are_still_cached_together():
    A = sl.placeholder((10, 24), name="A")
    B = sl.placeholder((10, 24), name="B")
    C = sl.compute(A.shape, lambda i, j: A[i, j] + B[i, j], name="C")
    F, E = sl.compute(A.shape, lambda i, j: (C[i, j], C[i, j] * B[i, j]), name="F")
    s = sl.create_schedule([F, E])
    s.cache_read(B, "local", [C, E])
    s.cache_write(C, "local")
    FL, EL = s.cache_write([F, E], "local")
    s[C].compute_inline()
    check(s, [A, B], [F, E])
