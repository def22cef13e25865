"""`Schedule.undo`: primitives taken back in place (the stages, tensors and axes the user holds
keep naming the same loops), and errors that only lowering finds say how to take their
primitive back."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl


def _row_sum():
    n = sl.var("n")
    k = sl.reduce_axis((0, 48), name="k")
    m = sl.placeholder((n, 48), name="M")
    r = sl.compute((n,), lambda i: sl.sum(m[i, k], axis=k), name="R")
    return m, r, k


def test_a_lowering_error_names_the_undo_that_takes_its_primitive_back():
    m, r, k = _row_sum()
    s = sl.create_schedule(r)
    stage = s[r]
    _, inner = stage.split(k, factor=8)
    stage.vectorize(inner)  # a race, which only lowering can see
    with pytest.raises(sl.ScheduleError, match=r"\(s\.undo\(\) takes this primitive back\)"):
        sl.lower(s, [m, r])
    stage.split(r.op.axis[0], factor=4)
    with pytest.raises(
        sl.ScheduleError,
        match=r"s\.undo\(2\) takes this primitive back, with "
        "the 1 after it",
    ):
        sl.build(s, [m, r])
    s.undo(2)
    outer, _ = stage.split(r.op.axis[0], factor=4)  # the held stage, as before the two
    stage.parallel(outer)
    kernel = sl.build(s, [m, r])
    x = np.random.default_rng(3).random((13, 48), dtype=np.float32)
    out = np.full(13, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, sl.reference(r, {m: x}), rtol=1e-5)


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
