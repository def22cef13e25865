"""Box extents that isl writes as rational expressions, integral on their domain.

A stage computed inside a fused loop gets extents such as ``(3 + f)/3 : f mod 3 = 0``: isl's
`PwAff.max_val` refuses them ("expecting integer affine expression"); the largest value must
come from the set of their values instead.
"""

from __future__ import annotations

import islpy as isl

import schedlang as sl
from schedlang.poly import placement
from tests.schedule.util import check


def test_a_producer_computed_inside_a_fused_loop_reads_a_corner_and_a_column():
    x = sl.placeholder((6, 6), name="X")
    s0 = sl.compute((6, 6), lambda i, j: x[i, j] + 1.0, name="S0")
    s1 = sl.compute(
        (6, 3, 6),
        lambda i, t, j: s0[i, j] * (t + 1) + sl.select(t > 0, s0[i, j], s0[0, 0]),
        name="S1",
    )
    s = sl.create_schedule(s1)
    i, t, j = s1.op.axis
    s[s1].fuse(i, t)
    s[s0].compute_at(s[s1], j)
    check(s, [x], [s1])


def test_the_largest_value_of_a_rational_extent():
    extent = isl.PwAff(
        "{ [f] -> [(3 + f)/3] : f mod 3 = 0 and 0 <= f <= 15; [f] -> [1] : 16 <= f <= 17 }"
    )
    assert placement.largest_value(extent, isl.Set("{ : }")) == 6
    assert (
        placement.largest_value(
            isl.PwAff("[n] -> { [f] -> [n - f] : 0 <= f < n }"), isl.Set("[n] -> { : n > 0 }")
        )
        is None
    )
