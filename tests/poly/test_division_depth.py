"""`division_depth`: how deep a footprint's integer divisions nest, which decides how many isl
operations placement lets its box take (`placement.NESTED_BOX_OPERATIONS`)."""

from __future__ import annotations

import islpy as isl
import pytest

from schedlang.poly.footprint_box import division_depth


@pytest.mark.parametrize(
    ("relation", "depth"),
    [
        ("{ [i] -> A[o] : 0 <= o - 8i < 8 }", 0),  # no division left
        ("{ [i] -> A[o] : 0 <= o < 100 and 8*floor((i + o)/8) <= i + o - 3 }", 1),
        (  # a persistent block's tile index over groups of tiles (placement's footprint)
            "{ [i0, i1] -> A[o] : 0 <= o < 8192 and 512*floor((-8 + i0 + 132*i1 - "
            "8*floor(o/128))/512) <= -512 + i0 + 132*i1 - 8*floor(o/128) }",
            2,
        ),
        (
            "{ [i] -> A[o] : 0 <= o < 100 and "
            "7*floor((i + 5*floor((o + 3*floor(i/3))/5))/7) <= i - 2 }",
            3,
        ),
        (  # an existential variable isl has no expression for counts as one level
            "{ [i] -> A[o] : exists (e : 4e <= i + 2o <= 4e + 5 and 3e <= 2i - o <= 3e + 4) }",
            1,
        ),
    ],
)
def test_nesting_is_counted_through_each_floor(relation, depth):
    assert division_depth(isl.Map(relation)) == depth
