"""``fuse()`` of no loops (TE's singleton): a loop of one iteration outside all the others,
which a zero-dimensional stage can split, bind or compute others at; checked against numpy."""

from __future__ import annotations

import numpy as np

import schedlang as sl
from schedlang.driver import lower_for_gpu

RNG = np.random.default_rng(9)


def test_a_zero_dimensional_sum_gets_a_loop_to_split_and_bind():
    x = sl.placeholder((sl.var("n"),), "int32", name="X")
    k = sl.reduce_axis((0, x.shape[0]), name="k")
    total = sl.compute((), lambda: sl.sum(x[k] * 3, axis=k), name="Total")
    s = sl.create_schedule(total.op)
    one = s[total].fuse()
    assert s[total].leaves[0] is one and one.name == "singleton"
    outer, inner = s[total].split(one, nparts=20)
    assert "Total_singleton = s[Total].fuse()" in str(s)
    data = RNG.integers(-9, 9, 13, dtype="int32")
    got = np.full((), -1, "int32")
    sl.build(s, [total, x])(got, data)
    assert got == 3 * data.sum()
    gpu = sl.create_schedule(total.op)
    gpu[total].bind(gpu[total].fuse(), sl.thread_axis("blockIdx.x"))
    assert "for bx in range(0, 1):  # blockIdx.x" in str(lower_for_gpu(gpu, [total, x]))


def test_the_new_loop_is_outermost_and_reorders_like_any():
    b = sl.placeholder((5, 7), name="B")
    c = sl.compute((5, 7), lambda i, j: b[i, j] * 2.0 + 1.0, name="C")
    s = sl.create_schedule(c.op)
    one = s[c].fuse()
    i, j = c.op.axis
    assert [a.name for a in s[c].leaves] == ["singleton", "i", "j"]
    assert s.copy()[c].fuse().name == "singleton.1"  # a second one, outside the first
    s[c].reorder(i, one)
    s[c].vectorize(j)
    x = RNG.uniform(-1, 1, (5, 7)).astype("float32")
    got = np.full((5, 7), np.nan, "float32")
    sl.build(s, [b, c])(x, got)
    np.testing.assert_allclose(got, x * 2 + 1, rtol=1e-6)
    replayed = s.copy()
    assert str(sl.lower(replayed, [b, c])) == str(sl.lower(s, [b, c]))
