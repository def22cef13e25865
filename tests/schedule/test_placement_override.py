"""A stage has one placement, and the last compute_at, compute_inline or compute_root given
decides, as in TE (each sets the stage's attach type) and Halide. Between compute_inline and
compute_at the change is seldom meant, so a `SchedlangWarning` names both and the stage; the
way back to the default (compute_root) and a move to another loop say nothing."""

from __future__ import annotations

import warnings

import pytest

import schedlang as sl

from .util import check


def _chain():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((n,), lambda i: b[i] + b[i] * b[i], name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], factor=4)
    return s, a, b, c, xo, xi


def _only(last):
    """The loop nest of the schedule with `last` alone as B's placement."""
    s, a, b, c, xo, _ = _chain()
    if last == "compute_at":
        s[b].compute_at(s[c], xo)
    else:
        s[b].compute_inline()
    return str(sl.lower(s, [a, c]))


def test_compute_at_after_compute_inline_decides_and_says_so():
    s, a, b, c, xo, _ = _chain()
    s[b].compute_inline()
    with pytest.warns(
        sl.SchedlangWarning,
        match=r"In schedule for 'B': compute_at\(s\[C\], i\.outer\) at "
        r"test_placement_override\.py:\d+: replaces compute_inline\(\) at "
        r"test_placement_override\.py:\d+: a stage has one placement and the last one given "
        r"decides \(as in TE\); s\.undo\(\) takes this one back",
    ):
        s[b].compute_at(s[c], xo)
    text = str(check(s, [a], [c], {"n": 11}))
    assert text == _only("compute_at")


def test_compute_inline_after_compute_at_decides_and_says_so():
    s, a, b, c, xo, _ = _chain()
    s[b].compute_at(s[c], xo)
    with pytest.warns(
        sl.SchedlangWarning,
        match=r"In schedule for 'B': compute_inline\(\) at test_placement_override\.py:\d+: "
        r"replaces compute_at\(s\[C\], i\.outer\) at test_placement_override\.py:\d+: ",
    ):
        s[b].compute_inline()
    text = str(check(s, [a], [c], {"n": 11}))
    assert text == _only("compute_inline")


def test_undo_takes_the_override_back_without_a_word():
    s, a, b, c, xo, _ = _chain()
    s[b].compute_inline()
    with pytest.warns(sl.SchedlangWarning, match="replaces compute_inline"):
        s[b].compute_at(s[c], xo)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.undo()  # a replay applies again what was said when it was first applied
        s.copy()
    assert str(sl.lower(s, [a, c])) == _only("compute_inline")


def test_compute_root_and_a_move_to_another_loop_say_nothing():
    s, a, b, c, xo, xi = _chain()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s[b].compute_at(s[c], xo)
        s[b].compute_at(s[c], xi)
        s[b].compute_root()
        s[b].compute_inline()
        s[b].compute_root()
        s[b].compute_at(s[c], xi)
    check(s, [a], [c], {"n": 11})
