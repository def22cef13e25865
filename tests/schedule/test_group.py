"""``s.create_group``: stages placed together by one compute_at, checked against the
reference (the group is only a name for their compute_at records)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule import records as rec
from tests.schedule.util import check


def _chain():
    m, n = sl.var("m"), sl.var("n")
    A = sl.placeholder((m, n), name="A")
    x = sl.compute((m, n), lambda i, j: A[i, j] * 3, name="x")
    x1 = sl.compute((m, n), lambda i, j: x[i, j] + 1, name="x1")
    x2 = sl.compute((m, n), lambda i, j: x1[i, j] * x1[i, j], name="x2")
    return A, x, x1, x2


def test_a_group_is_computed_at_one_loop():
    A, x, x1, x2 = _chain()
    s = sl.create_schedule(x2)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x1].group is g and s[x].group is g and s[x2].group is None
    g.compute_at(s[x2], x2.op.axis[0])
    assert g.attach_stage is s[x2] and g.num_child_stages == 2
    for t in (x, x1):
        assert isinstance(s[t].attach, rec.ComputeAt) and s[t].attach.target == "x2"
    check(s, [A], [x2], {"m": 5, "n": 7})


def test_stages_inside_one_another_stay_there():
    A, x, x1, x2 = _chain()
    s = sl.create_schedule(x2)
    g = s.create_group(outputs=x1, inputs=A)
    s[x].compute_at(s[x1], x1.op.axis[1])
    g.compute_at(s[x2], x2.op.axis[0])
    assert s[x].attach.target == "x1" and s[x1].attach.target == "x2"
    check(s, [A], [x2], {"m": 4, "n": 9})


def test_groups_nest_by_the_stages_they_hold():
    A, x, x1, x2 = _chain()
    s = sl.create_schedule(x2)
    g1 = s.create_group(outputs=x1, inputs=x)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s.groups == [g1, g2]
    assert s[x].group is g2 and s[x1].group is g1 and g1.group is g2 and g2.group is None
    assert (g2.num_child_stages, g1.num_child_stages) == (2, 1)


def test_an_inner_group_moves_inside_its_outer_groups_stages():
    A, x, x1, x2 = _chain()
    s = sl.create_schedule(x2)
    g1 = s.create_group(outputs=x, inputs=x, include_inputs=True)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x].group is g1 and s[x1].group is g2 and g1.group is g2
    g2.compute_at(s[x2], x2.op.axis[0])
    g1.compute_at(s[x1], x1.op.axis[1])
    assert s[x].attach.target == "x1" and s[x1].attach.target == "x2"
    check(s, [A], [x2], {"m": 3, "n": 5})
    g2.compute_root()  # x stays inside x1, which goes back to the root
    assert isinstance(s[x1].attach, rec.ComputeRoot) and s[x].attach.target == "x1"
    check(s, [A], [x2], {"m": 3, "n": 5})


def test_a_group_of_nothing_is_refused():
    A, x, x1, x2 = _chain()
    s = sl.create_schedule(x2)
    with pytest.raises(sl.ScheduleError, match="no stage lies between"):
        s.create_group(outputs=x, inputs=x)


def test_a_scans_body_is_a_group_of_its_own():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="h")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    a = sl.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="a")
    b = sl.compute((m, n), lambda t, i: a[t, i] * 2.0, name="b")
    update = sl.compute((m, n), lambda t, i: b[t, i] + 1.0, name="update")
    result = sl.scan(init, update, state, inputs=[x])
    s = sl.create_schedule(result)
    body = s[a].group
    assert body is not None and body is s[b].group is s[update].group
    assert s[init].group is None and set(body.members) == {"a", "b", "update"}
    inner = s.create_group(outputs=b, inputs=[state, x])
    assert s[a].group is inner and inner.group is body
    inner.compute_at(s[update], update.op.axis[1])
    with pytest.raises(sl.ScheduleError, match="does not read 'b'"):
        s[b].compute_at(s[init], init.op.axis[0])
    xv = np.random.default_rng(4).uniform(-1, 1, (6, 5)).astype("float32")
    out = np.full((6, 5), np.nan, "float32")
    sl.build(s, [x, result])(xv, out)
    np.testing.assert_allclose(out, sl.reference(result, {x: xv}), rtol=1e-6)
