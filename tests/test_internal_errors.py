"""No raw library or Python error leaves schedlang for a user: what schedlang's own code raises
(an isl error, a KeyError) leaves a public function as an `InternalError` that says it is a bug
and keeps the original as its cause; what a user's own callback raises passes unchanged."""

from __future__ import annotations

import islpy as isl
import pytest

import schedlang as sl
from schedlang.poly import placement


def chain():
    a = sl.placeholder((16,), name="A")
    b = sl.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((16,), lambda i: b[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    xo, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], xo)
    return a, c, s


def as_if_in_placement(source: str, name: str):
    """Function `name` of `source`, compiled as if it were written in poly/placement.py: the
    frame that raises is then schedlang's own, as it is for a real bug."""
    scope = {"isl": isl}
    exec(compile(source, placement.__file__, "exec"), scope)
    return scope[name]


FAILURES = {
    # the call that failed before extents were read off the set of their values
    "isl": "def fail(extent, context):\n"
    "    return isl.PwAff('{ [f] -> [(3 + f)/3] : f mod 3 = 0 and 0 <= f <= 9 }').max_val()\n",
    "python": "def fail(extent, context):\n    return {}['missing']\n",
}


@pytest.mark.parametrize("kind, raised", [("isl", isl.Error), ("python", KeyError)])
def test_an_error_of_schedlangs_own_code_leaves_as_an_internal_error(monkeypatch, kind, raised):
    monkeypatch.setattr(placement, "largest_value", as_if_in_placement(FAILURES[kind], "fail"))
    a, c, s = chain()
    with pytest.raises(sl.InternalError, match=r"lower failed inside schedlang: .* a bug") as info:
        sl.lower(s, [a, c])
    assert isinstance(info.value.__cause__, raised)


def test_an_error_of_a_users_callback_passes_unchanged():
    a = sl.placeholder((4,), name="A")

    def fcompute(i):
        if a[i] is not None:
            raise ZeroDivisionError("the user's own")

    with pytest.raises(ZeroDivisionError, match="the user's own"):
        sl.compute((4,), fcompute, name="B")


def test_a_schedule_of_placeholders_alone_is_refused():
    a = sl.placeholder((8,), name="A")
    with pytest.raises(sl.ScheduleError, match=r"every output \('A'\) is a placeholder"):
        sl.create_schedule(a)
    with pytest.raises(sl.ScheduleError, match=r"no outputs given; pass the tensors to compute"):
        sl.create_schedule([])


def test_a_call_python_refuses_is_the_callers_mistake():
    """An unknown keyword never reaches the function: Python's own TypeError, not a bug."""
    a, c, s = chain()
    with pytest.raises(TypeError, match="unexpected keyword argument 'target'"):
        sl.lower(s, [a, c], target="cuda")
