"""`lane_stride`: how an index moves with a vector's lane, checked against the index's values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedlang.ir.expr import Binary, Var, const
from schedlang.loopir.index.strides import lane_stride

X, LANE = Var("x", "int32", "loop"), Var("lane", "int32", "loop")


def _quotient(scale: int, offset: int, divisor: int) -> Binary:
    base = Binary("+", Binary("*", X, const(scale), "int32"), const(offset), "int32")
    return Binary("//", Binary("+", base, LANE, "int32"), const(divisor), "int32")


def _values(scale: int, offset: int, divisor: int, x: int, lanes: int) -> set[int]:
    return {(scale * x + offset + lane) // divisor for lane in range(lanes)}


@given(
    lanes=st.sampled_from([2, 4, 8]),
    scale=st.integers(-12, 12),
    offset=st.integers(-20, 20),
    divisor=st.integers(1, 24),
)
def test_a_quotient_is_uniform_only_where_every_lane_shares_it(lanes, scale, offset, divisor):
    """Stride 0 is claimed exactly when the base and the divisor are multiples of the
    lanes' count; where it is claimed, every x gives every lane the same quotient."""
    stride = lane_stride(_quotient(scale, offset, divisor), LANE, lanes)
    aligned = scale % lanes == 0 and offset % lanes == 0 and divisor % lanes == 0
    assert (stride == 0) == aligned
    if stride == 0:
        assert all(len(_values(scale, offset, divisor, x, lanes)) == 1 for x in range(-30, 30))


def test_a_quotient_needs_to_know_the_lanes():
    assert lane_stride(_quotient(4, 0, 8), LANE) is None
    assert lane_stride(_quotient(4, 0, 8), LANE, 4) == 0
