"""Reads and guards that mention symbolic sizes are affine in the sizes too."""

from __future__ import annotations

import schedlang as sl
from tests.schedule.util import check


def test_guard_on_symbolic_size_restricts_the_read():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    pad = sl.compute(
        (n + 2,),
        lambda i: sl.if_then_else(sl.all(i >= 1, i < n + 1), a[i - 1], 0.0),
        name="P",
    )
    s = sl.create_schedule(pad)
    check(s, [a], [pad], {"n": 7})


def test_reversed_read_uses_the_size():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    r = sl.compute((n,), lambda i: a[n - 1 - i], name="R")
    s = sl.create_schedule(r)
    xo, xi = s[r].split(r.op.axis[0], factor=4)
    check(s, [a], [r], {"n": 13})
