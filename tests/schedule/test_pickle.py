"""A schedule pickles with its algorithm (TE's schedules do): unpickled, it lowers to the same
loop nest and computes the same values."""

from __future__ import annotations

import pickle

import numpy as np

import schedlang as sl


def test_a_pickled_schedule_lowers_and_runs_as_the_original():
    n = sl.var("n")
    a = sl.placeholder((n, 12), name="A")
    k = sl.reduce_axis((0, 12), name="k")
    total = sl.compute((n,), lambda i: sl.sum(a[i, k] * 2.0, axis=k), name="T", attrs={"w": 3})
    shifted = sl.compute((n,), lambda i: total[i] + 1.0, name="S")
    s = sl.create_schedule(shifted.op)
    outer, inner = s[shifted].split(shifted.op.axis[0], factor=4)
    s[total].compute_at(s[shifted], outer)
    ko, ki = s[total].split(k, factor=5)
    s[shifted].vectorize(inner)
    s2, (a2, shifted2) = pickle.loads(pickle.dumps((s, [a, shifted])))
    assert str(sl.lower(s2, [a2, shifted2])) == str(sl.lower(s, [a, shifted]))
    assert s2[shifted2].op.input_tensors[0].op.attrs == {"w": 3}
    x = np.random.default_rng(2).uniform(-1, 1, (9, 12)).astype("float32")
    got = np.full(9, np.nan, "float32")
    sl.build(s2, [a2, shifted2])(x, got)
    np.testing.assert_allclose(got, 2 * x.sum(axis=1) + 1, rtol=1e-5)
