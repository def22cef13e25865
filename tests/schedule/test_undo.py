"""`Schedule.undo`: primitives taken back in place (the stages, tensors and axes the user holds
keep naming the same loops), and errors that only lowering finds say how to take their
primitive back."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl

from .util import check


def _row_sum():
    n = sl.var("n")
    k = sl.reduce_axis((0, 48), name="k")
    m = sl.placeholder((n, 48), name="M")
    r = sl.compute((n,), lambda i: sl.sum(m[i, k], axis=k), name="R")
    return m, r, k


def _local_stage_over_threads():
    """A local stage bound to threads: only lowering sees that its copies stay unset."""
    a = sl.placeholder((64,), name="A")
    b = sl.compute((64,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((64,), lambda i: b[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=16)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], bx)
    s[b].set_scope("local")
    return s, a, b, c


def test_a_lowering_error_names_the_undo_that_takes_its_primitive_back():
    s, a, b, c = _local_stage_over_threads()
    s[b].bind(b.op.axis[0], sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.ScheduleError, match=r"\(s\.undo\(\) takes this primitive back\)"):
        sl.lower(s, [a, c])
    stage = s[c]
    s.undo()
    kernel = sl.build(s, [a, c], target="cuda")
    x = np.random.default_rng(3).random(64, dtype=np.float32)
    out = np.full(64, np.nan, np.float32)
    kernel.simulate(x, out)
    np.testing.assert_allclose(out, x * 2 + 1, rtol=1e-6)
    assert stage is s[c]  # the held stage is still the schedule's


def test_the_undo_counts_the_primitives_after_the_bad_one():
    s, a, b, c = _local_stage_over_threads()
    s[b].bind(b.op.axis[0], sl.thread_axis("threadIdx.x"))
    s[c].set_store_predicate(sl.thread_axis("threadIdx.x").var >= 0)
    with pytest.raises(
        sl.ScheduleError,
        match=r"s\.undo\(2\) takes this primitive back, with "
        "the 1 after it",
    ):
        sl.build(s, [a, c], target="cuda")


def test_undo_leaves_what_replaying_the_rest_gives():
    m, r, k = _row_sum()
    s = sl.create_schedule(r)
    io, ii = s[r].split(r.op.axis[0], factor=4)
    s[r].reorder(ii, io)
    s[r].unroll(ii)
    before = str(sl.lower(s, [m, r]))
    s[r].split(k, factor=16)
    s.undo()
    assert str(sl.lower(s, [m, r])) == before
    assert len(s.records) == 3
    s.undo(3)
    assert s.records == [] and str(sl.lower(s, [m, r])) == str(
        sl.lower(sl.create_schedule(r), [m, r])
    )


def test_undo_takes_back_stages_that_primitives_added():
    m, r, _ = _row_sum()
    s = sl.create_schedule(r)
    cached = s.cache_write(r, "local")
    assert len(s.stages) == 3
    s.undo()
    assert len(s.stages) == 2
    with pytest.raises(sl.ScheduleError, match="not part of this schedule"):
        s[cached]


@pytest.mark.parametrize(("steps", "match"), [(0, "positive integer"), (5, "has 1 primitive")])
def test_undo_of_more_than_there_is_is_refused(steps, match):
    m, r, k = _row_sum()
    s = sl.create_schedule(r)
    s[r].split(k, factor=8)
    with pytest.raises(sl.ScheduleError, match=match):
        s.undo(steps)
    assert len(s.records) == 1


def test_a_stage_that_undo_took_back_is_refused():
    m, r, _ = _row_sum()
    s = sl.create_schedule(r)
    stage = s[s.cache_read(m, "local", [r])]
    s.undo()
    with pytest.raises(
        sl.ScheduleError,
        match=r"^In schedule for 'M.local': split\(ax0, factor=4\) at test_undo.py:\d+: this "
        r"stage is no longer part of the schedule: s.undo\(\) took back the primitive that "
        r"added it; apply that primitive again, and schedule the stage it gives$",
    ):
        stage.split(stage.op.axis[0], factor=4)
    assert s.records == []
    again = s[s.cache_read(m, "local", [r])]  # a stage of the same name, made anew
    with pytest.raises(sl.ScheduleError, match="'M.local' is not part of this schedule"):
        s[stage]
    with pytest.raises(sl.ScheduleError, match="must be a stage of this schedule"):
        again.compute_at(stage, stage.op.axis[0])
    with pytest.raises(sl.ScheduleError, match="no longer part of the schedule"):
        stage.compute_at(s[r], r.op.axis[0])
    assert len(s.records) == 1
    again.compute_at(s[r], r.op.axis[0])
    check(s, [m], [r], {"n": 5})
