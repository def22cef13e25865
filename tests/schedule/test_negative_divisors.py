"""Floor division and modulo by a negative constant in an index: Python's floors, which isl
gets as ``a // -d == (-a) // d`` and ``a % -d == -((-a) % d)``; exact under any schedule."""

from __future__ import annotations

import pytest

import schedlang as sl

from .util import check


def reversed_pairs():
    n = sl.var("n")
    A = sl.placeholder((n,), name="A")
    C = sl.compute(
        (n - 2,), lambda i: A[(i - 2 * n + 6) // -2] * 2.0 + A[(i + 1) % -3 + 2], name="C"
    )
    return A, C, n


@pytest.mark.parametrize("schedule", ["plain", "split", "vectorized", "producer_at"])
def test_negative_divisors_match_the_reference(schedule):
    A, C, n = reversed_pairs()
    inputs = [A]
    s = sl.create_schedule(C)
    if schedule == "split":
        s[C].split(C.op.axis[0], factor=3)
    elif schedule == "vectorized":
        _, inner = s[C].split(C.op.axis[0], factor=4)
        s[C].vectorize(inner)
    elif schedule == "producer_at":
        P = sl.compute((n,), lambda j: A[j] + 1.0, name="P")
        C = sl.compute((n - 2,), lambda i: P[i // -2 + n - 1] - P[(i + 2) % -2 + 1], name="C")
        s = sl.create_schedule(C)
        outer, _ = s[C].split(C.op.axis[0], factor=4)
        s[P].compute_at(s[C], outer)
    check(s, inputs, [C], sizes={"n": 11})
    check(s, inputs, [C], sizes={"n": 4})


def test_a_read_out_of_bounds_through_a_negative_divisor_is_found():
    A = sl.placeholder((8,), name="A")
    C = sl.compute((8,), lambda i: A[i // -2 + 3], name="C")
    with pytest.raises(sl.AlgorithmError, match=r"reads 'A\[i // -2 \+ 3\]' out of bounds"):
        sl.lower(sl.create_schedule(C), [A, C])
