"""Two cross-thread reductions that differ only in their combiner's body get different keys."""

from __future__ import annotations

import schedlang as sl
from schedlang.codegen.fingerprint import fingerprint


def lowered(combine):
    a = sl.placeholder((4, 16), name="A")
    k = sl.reduce_axis((0, 16), name="k")
    red = sl.comm_reducer(combine, lambda t: 0.0, "mine")
    b = sl.compute((4,), lambda i: red(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b)
    s[b].bind(b.op.axis[0], sl.thread_axis("blockIdx.x"))
    s[b].bind(k, sl.thread_axis("threadIdx.x"))
    return sl.lower(s, [a, b])


def test_combiner_body_is_part_of_the_key():
    plus = lowered(lambda x, y: x + y)
    larger = lowered(lambda x, y: sl.maximum(x, y))
    assert fingerprint(plus, "t") != fingerprint(larger, "t")
    assert fingerprint(plus, "t") == fingerprint(lowered(lambda x, y: x + y), "t")
