"""`describe()` replays to the same loop nest; `copy()` lowers identically and keeps user axes."""

from __future__ import annotations

import pytest

import schedlang as sl

from .test_matmul import SCHEDULES as MATMUL_SCHEDULES
from .test_matmul import matmul
from .test_stencil import BLUR_SCHEDULES, blur
from .util import check


def replayed(s, tensors):
    text = s.describe()
    assert text.startswith("s = sl.create_schedule([")
    scope = {"sl": sl, "s": None}
    scope.update({t.name: t for t in tensors})
    exec(text, scope)
    return scope["s"]


@pytest.mark.parametrize("schedule", MATMUL_SCHEDULES, ids=lambda f: f.__name__)
def test_matmul_replay(schedule):
    a, b, c = matmul(sl.var("M"), 11, 7)
    s = sl.create_schedule(c)
    schedule(s, c)
    again = replayed(s, [a, b, c])
    assert again.describe() == s.describe()
    assert str(sl.lower(again, [a, b, c])) == str(sl.lower(s, [a, b, c]))
    assert str(sl.lower(s.copy(), [a, b, c])) == str(sl.lower(s, [a, b, c]))


@pytest.mark.parametrize("schedule", BLUR_SCHEDULES, ids=lambda f: f.__name__)
def test_blur_replay(schedule):
    a, bx, by = blur(13, 7)
    s = sl.create_schedule(by)
    schedule(s, bx, by)
    again = replayed(s, [a, bx, by])
    assert str(sl.lower(again, [a, by])) == str(sl.lower(s, [a, by]))


def test_bind_replays():
    a, b, c = matmul(13, 11, 7)
    s = sl.create_schedule(c)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=4)
    s[c].bind(io, sl.thread_axis("blockIdx.x"))
    s[c].bind(ii, sl.thread_axis("threadIdx.x"))
    again = replayed(s, [a, b, c])
    assert again.describe() == s.describe()


def test_copy_is_independent_and_keeps_user_axes():
    a, b, c = matmul(13, 11, 7)
    s = sl.create_schedule(c)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=4)
    before = str(sl.lower(s, [a, b, c]))
    t = s.copy()
    assert str(sl.lower(t, [a, b, c])) == before
    t[c].reorder(ii, io)
    t[c].vectorize(j)
    assert str(sl.lower(s, [a, b, c])) == before
    assert str(sl.lower(t, [a, b, c])) != before
    check(t, [a, b], [c])
    with pytest.raises(sl.ScheduleError, match="already split"):
        t[c].split(i, factor=2)
