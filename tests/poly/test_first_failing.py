"""first_failing: the first step of a loop at which a condition inside it fails for some
value of the loops around it, as `loopir.loops.full_steps` splits loops there."""

from __future__ import annotations

from schedlang.ir.expr import Binary, Compare, Var, const
from schedlang.poly.first_failing import Span, first_failing

T, V, IO = (Var(name, "int32", "loop") for name in ("t", "v", "io"))


def _span(var, low, count):
    return Span(var, const(low), const(count))


def _plus(*terms):
    total = terms[0]
    for term in terms[1:]:
        total = Binary("+", total, term, "int32")
    return total


def test_a_bound_check_fails_from_the_step_whose_last_lane_leaves_the_range():
    """4 t + v < 20 over lanes v in 0..3 holds for every lane up to t = 4: the split is 5."""
    lanes = _span(V, 0, 4)
    cond = Compare("<", _plus(Binary("*", const(4), T, "int32"), V), const(20))
    found = first_failing(_span(T, 0, 8), [(cond, [lanes])], {})
    assert found.decided == [0]
    assert str(found.first) == "{ [(5)] }"


def test_a_diagonal_moves_with_the_loops_around_and_a_lanes_own_test_is_left_out():
    """Under ``64 (t - 1) + v <= 128 io`` the steps run full up to the block's diagonal; a
    test that fails at some lane at every step (``v == 0``) says nothing of where."""
    lanes = _span(V, 0, 64)
    key = _plus(Binary("*", const(64), Binary("-", T, const(1), "int32"), "int32"), V)
    causal = Compare("<=", key, Binary("*", const(128), IO, "int32"))
    own = Compare("==", V, const(0))
    outer = {IO: _span(IO, 0, 4)}
    found = first_failing(_span(T, 1, 8), [(own, [lanes]), (causal, [lanes])], outer)
    assert found.decided == [1]
    assert list(found.params.values()) == [IO]
    assert str(found.first) == "[p0] -> { [(1 + 2p0)] }"


def test_no_condition_that_holds_for_every_lane_gives_no_split():
    lanes = _span(V, 0, 4)
    assert first_failing(_span(T, 0, 8), [(Compare("==", V, T), [lanes])], {}) is None
