"""A user's mistake raises with a traceback that ends at the user's line, as in JAX."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import schedlang as sl
from schedlang import driver
from schedlang.schedule import records as rec
from schedlang.schedule.errors import FactorError, PlacementError

PACKAGE = os.path.dirname(os.path.abspath(sl.__file__))


def frames(info: pytest.ExceptionInfo) -> list[tuple[str, int]]:
    """(file, line) of each frame of the traceback, outermost first."""
    found = []
    tb = info.tb
    while tb is not None:
        found.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    return found


def here() -> int:
    """The line after the caller's: where the statement under `pytest.raises` is."""
    return inspect.currentframe().f_back.f_lineno + 2


def assert_ends_at(info: pytest.ExceptionInfo, line: int) -> None:
    shown = frames(info)
    assert shown[-1] == (__file__, line)
    assert not [f for f, _ in shown if f.startswith(PACKAGE + os.sep)]


def chain():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((16,), lambda i: b[i] + 1.0, name="C")
    return a, b, c, sl.create_schedule(c)


def test_a_bad_split_factor():
    *_, c, s = chain()
    line = here()
    with pytest.raises(FactorError) as info:
        s[c].split(c.op.axis[0], factor=0)
    assert_ends_at(info, line)


def test_a_bad_tile_ends_at_the_tile_not_at_the_split_inside_it():
    a = sl.placeholder((16, 16), name="A")
    b = sl.compute((16, 16), lambda i, j: a[i, j] * 2.0, name="B")
    s = sl.create_schedule(b)
    line = here()
    with pytest.raises(FactorError) as info:
        s[b].tile(*b.op.axis, 4, -1)
    assert_ends_at(info, line)


def test_an_illegal_compute_at():
    _, b, c, s = chain()
    line = here()
    with pytest.raises(PlacementError) as info:
        s[b].compute_at(s[b], b.op.axis[0])
    assert_ends_at(info, line)


def test_a_placement_found_illegal_when_lowering():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((16,), lambda i: b[i] + 1.0, name="C")
    d = sl.compute((16,), lambda i: b[i] + c[i], name="D")
    s = sl.create_schedule(d)
    s[b].compute_at(s[c], c.op.axis[0])
    line = here()
    with pytest.raises(PlacementError) as info:
        sl.lower(s, [a, d])
    assert_ends_at(info, line)


def test_an_out_of_bounds_algorithm_when_lowering():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i + 1], name="B")
    s = sl.create_schedule(b)
    line = here()
    with pytest.raises(sl.AlgorithmError, match="out of bounds") as info:
        sl.lower(s, [a, b])
    assert_ends_at(info, line)


def test_an_out_of_bounds_algorithm_when_building():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i + 1], name="B")
    s = sl.create_schedule(b)
    line = here()
    with pytest.raises(sl.AlgorithmError, match="out of bounds") as info:
        sl.build(s, [a, b], target="cuda")
    assert_ends_at(info, line)


def test_a_bad_kernel_argument():
    a, _, c, s = chain()
    kernel = sl.build(s, [a, c])
    line = here()
    with pytest.raises(TypeError, match="must have dtype float32") as info:
        kernel(np.ones(16), np.empty(16, np.float32))
    assert_ends_at(info, line)


def test_a_mistake_inside_the_users_function_ends_in_that_function():
    a = sl.placeholder((16,), dtype="int32", name="A")
    line = here()
    with pytest.raises(sl.AlgorithmError, match="between integers") as info:
        sl.compute((16,), lambda i: a[i] / 2)
    assert_ends_at(info, line)
    assert info.traceback[-1].name == "<lambda>"


def test_a_mistake_in_an_expression_outside_a_compute():
    i = sl.placeholder((16,), dtype="int32", name="I")
    line = here()
    with pytest.raises(sl.AlgorithmError, match="between integers") as info:
        _ = i[0] / 2
    assert_ends_at(info, line)
    line = here()
    with pytest.raises(sl.AlgorithmError, match="needs float arguments") as info:
        sl.exp(i[0])
    assert_ends_at(info, line)


def test_full_tracebacks_on_request(monkeypatch):
    monkeypatch.setenv("SCHEDLANG_TRACEBACK", "full")
    *_, c, s = chain()
    with pytest.raises(FactorError) as info:
        s[c].split(c.op.axis[0], factor=0)
    assert frames(info)[-1][0] == os.path.join(PACKAGE, "schedule", "stage.py")


def test_internal_errors_keep_every_frame(monkeypatch):
    a, _, c, s = chain()
    monkeypatch.setattr(driver, "check_bounds", lambda *_: s.record_for(rec.Split))
    with pytest.raises(sl.InternalError, match="no Split record") as info:
        sl.lower(s, [a, c])
    assert frames(info)[-1][0] == os.path.join(PACKAGE, "schedule", "schedule.py")


def test_a_function_that_is_not_one_ends_at_the_users_line():
    line = here()
    with pytest.raises(TypeError, match=r"fcompute must be a function of the indices") as info:
        sl.compute((16,), "A[i]")
    assert_ends_at(info, line)


def test_errors_of_a_users_callback_keep_every_frame():
    def fcompute(i):
        return i.no_such_attribute

    with pytest.raises(AttributeError, match="no_such_attribute") as info:
        sl.compute((16,), fcompute)
    assert frames(info)[-1] == (__file__, fcompute.__code__.co_firstlineno + 1)
    assert any(f.startswith(PACKAGE + os.sep) for f, _ in frames(info))
