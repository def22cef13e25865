"""`sl.build` and `sl.lower` hold Python's garbage collector while they compile, and leave it
as they found it."""

from __future__ import annotations

import gc

import pytest

import schedlang as sl
from schedlang.collector import paused


def _schedule():
    a = sl.placeholder((7, 5), name="A")
    b = sl.compute((7, 5), lambda i, j: a[i, j] * 2.0, name="B")
    return sl.create_schedule(b), [a, b]


@pytest.fixture
def collector_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_nests_and_restores(collector_enabled):
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer compile is still under way
    assert gc.isenabled()


def test_paused_restores_after_an_error(collector_enabled):
    with pytest.raises(ValueError), paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(collector_enabled):
    gc.disable()
    s, args = _schedule()
    sl.build(s, args)
    assert not gc.isenabled()


def test_build_and_lower_restore_the_collector(collector_enabled):
    s, args = _schedule()
    sl.lower(s, args)
    sl.build(s, args)
    assert gc.isenabled()
