"""Reducers whose identity and combination use the compute's indices (TE allows them: each
element is reduced with a reducer of its own). The reference folds each element's terms in
order from its identity; scheduled kernels (a local cache, a split reduce loop, a
`where=`) are checked against it and against numpy loops, on random data with NaN-poisoned
outputs. What cannot hold for such a reducer is refused: rfactor and combining threads."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import AlgorithmError, LoweringError
from schedlang.schedule.errors import RFactorError

RNG = np.random.default_rng(11)


def _clamped_sums():
    """TE's own case: y[n] folds x[0:n] from select(n > 1, 0, n) by max(acc + x, n)."""
    x = sl.placeholder((10,), name="x")

    def f(n):
        rv = sl.reduce_axis((0, n), name="rv")
        start = lambda dtype: sl.if_then_else(n > 1, sl.const(0, dtype), n.astype(dtype))  # noqa: E731
        step = sl.comm_reducer(lambda a, b: sl.max(a + b, n.astype("float32")), start, "clamp")
        return step(x[rv], axis=rv)

    return x, sl.compute(x.shape, f, name="y")


def _clamped_sums_by_hand(x: np.ndarray) -> np.ndarray:
    out = []
    for n in range(len(x)):
        total = np.float32(0 if n > 1 else n)
        for r in range(n):
            total = max(np.float32(total + x[r]), np.float32(n))
        out.append(total)
    return np.array(out, "float32")


def test_an_identity_and_a_combination_of_the_index_through_a_local_cache():
    x, y = _clamped_sums()
    s = sl.create_schedule(y)
    s.cache_write(y, "local")
    text = str(sl.lower(s, [x, y]))
    assert "y.local[n.c] = select(n.c > 1, 0.0, float32(n.c))" in text
    data = RNG.uniform(-1, 1, 10).astype("float32")
    out = np.full(10, np.nan, "float32")
    sl.build(s, [x, y])(data, out)
    np.testing.assert_allclose(out, _clamped_sums_by_hand(data), rtol=1e-6)
    np.testing.assert_allclose(sl.evaluate(y, {x: data}), _clamped_sums_by_hand(data), rtol=1e-6)


def _offset_sums():
    """y[i] = i + sum of the positive x[i, k]: a sum whose identity is the index."""
    m = sl.var("m")
    x = sl.placeholder((m, 13), name="x")

    def f(i):
        k = sl.reduce_axis((0, 13), name="k")
        by_index = sl.comm_reducer(lambda a, b: a + b, lambda t: i.astype(t), "offset_sum")
        return by_index(x[i, k], axis=k, where=x[i, k] > 0)

    return x, sl.compute((m,), f, name="y")


def test_an_identity_of_the_index_with_a_split_reduce_loop_and_where():
    x, y = _offset_sums()
    s = sl.create_schedule(y)
    ko, ki = s[y].split(y.op.reduce_axis[0], factor=4)
    s[y].parallel(y.op.axis[0])
    data = RNG.uniform(-1, 1, (7, 13)).astype("float32")
    out = np.full(7, np.nan, "float32")
    sl.build(s, [x, y])(data, out)
    want = np.arange(7) + np.where(data > 0, data, 0).sum(axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(sl.evaluate(y, {x: data}), want, rtol=1e-5)


def test_what_cannot_hold_for_such_a_reducer_is_refused():
    x, y = _offset_sums()
    s = sl.create_schedule(y)
    with pytest.raises(RFactorError, match="whose identity or combination uses the compute's"):
        s.rfactor(y, y.op.reduce_axis[0])
    s = sl.create_schedule(y)
    s[y].bind(y.op.axis[0], sl.thread_axis("blockIdx.x"))
    s[y].bind(y.op.reduce_axis[0], sl.thread_axis("threadIdx.x"))
    with pytest.raises(LoweringError, match="so threads cannot combine their partial results"):
        sl.lower(s, [x, y])


def test_an_identity_of_the_reduce_axis_is_refused():
    x = sl.placeholder((4, 5), name="x")
    k = sl.reduce_axis((0, 5), name="k")
    bad = sl.comm_reducer(lambda a, b: a + b, lambda t: k.var.astype(t), name="bad")
    with pytest.raises(AlgorithmError, match="uses the reduce axis 'k' in its identity"):
        sl.compute((4,), lambda i: bad(x[i, k], axis=k), name="y")
