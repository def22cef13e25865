"""`Stage.set_store_predicate` (TE's name): a stage's stores happen only where the predicate
holds, its hardware indices read as the loops bound to them around each store; the predicate
replays from the schedule's text, and what cannot be a predicate is refused at the call or,
where only the loop nest tells, at lowering, naming the primitive."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.text import schedule_text


def _plus_one(n=None):
    n = sl.var("n") if n is None else n
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] + 1.0, name="C")
    return n, a, c


def _blocks_of_eight(c):
    s = sl.create_schedule(c.op)
    bx, tx = s[c].split(c.op.axis[0], factor=8)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    return s


def test_only_the_threads_the_predicate_admits_store():
    n, a, c = _plus_one()
    s = _blocks_of_eight(c)
    s[c].set_store_predicate(sl.thread_axis("threadIdx.x").var < 3)
    kernel = sl.build(s, [a, c], target="cuda")
    x = np.random.default_rng(1).random(29, dtype=np.float32)
    out = np.full(29, np.nan, np.float32)
    kernel.simulate(x, out)
    stored = np.arange(29) % 8 < 3
    np.testing.assert_allclose(out[stored], x[stored] + 1, rtol=1e-6)
    assert np.isnan(out[~stored]).all()


def test_a_cross_thread_sum_stored_by_its_first_thread():
    n, m = sl.var("n"), sl.var("m")
    a = sl.placeholder((n, m), name="A")
    k = sl.reduce_axis((0, m), "k")
    b = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b.op)
    _, ki = s[b].split(k, factor=16)
    bf = s.rfactor(b, ki)
    xo, xi = s[b].split(s[b].op.axis[0], factor=8)
    s[b].bind(xo, sl.thread_axis("blockIdx.x"))
    s[b].bind(xi, sl.thread_axis("threadIdx.y"))
    tx = sl.thread_axis("threadIdx.x")
    s[b].bind(s[b].op.reduce_axis[0], tx)
    s[bf].compute_at(s[b], s[b].op.reduce_axis[0])
    s[b].set_store_predicate(tx.var.equal(0))  # TE's spelling of ==
    x = np.random.default_rng(2).random((13, 37), dtype=np.float32)
    out = np.full(13, np.nan, np.float32)
    sl.build(s, [a, b], target="cuda").simulate(x, out)
    np.testing.assert_allclose(out, sl.reference(b, {a: x}), rtol=1e-5)


def test_a_predicate_of_sizes_on_the_cpu():
    n, a, c = _plus_one()
    s = sl.create_schedule(c.op)
    s[c].set_store_predicate(n > 5)
    kernel = sl.build(s, [a, c])
    for length, stores in ((4, False), (9, True)):
        x = np.random.default_rng(length).random(length, dtype=np.float32)
        out = np.full(length, np.nan, np.float32)
        kernel(x, out)
        assert np.isnan(out).all() != stores
        if stores:
            np.testing.assert_allclose(out, x + 1, rtol=1e-6)


def test_the_predicate_replays_from_the_schedule_text():
    n, a, c = _plus_one()
    s = _blocks_of_eight(c)
    s[c].set_store_predicate(sl.all(sl.thread_axis("threadIdx.x").var < 3, n > 2))
    text = schedule_text(s)
    assert 'set_store_predicate(sl.all((sl.thread_axis("threadIdx.x").var < sl.const(3' in text
    names = {"sl": sl, "C": c, "n": n}
    exec(text.replace("s[C].split(s[C].op.axis[0]", "s[C].split(C.op.axis[0]"), names)
    assert str(sl.lower(names["s"], [a, c])) == str(sl.lower(s, [a, c]))


@pytest.mark.parametrize(
    ("predicate", "match"),
    [
        (lambda i, n: i + 1, "the predicate is int32, not bool"),
        (lambda i, n: i < 3, "the predicate reads i; it may read hardware indices"),
    ],
)
def test_what_cannot_be_a_predicate_is_refused_at_the_call(predicate, match):
    n, a, c = _plus_one()
    s = sl.create_schedule(c.op)
    with pytest.raises(sl.ScheduleError, match=match):
        s[c].set_store_predicate(predicate(c.op.axis[0].var, n))
    assert s.records == []  # the schedule is unchanged


def test_a_second_predicate_is_refused():
    n, a, c = _plus_one()
    s = sl.create_schedule(c.op)
    s[c].set_store_predicate(n > 1)
    with pytest.raises(sl.ScheduleError, match="has a store predicate already"):
        s[c].set_store_predicate(n > 2)


def test_the_same_predicate_again_changes_nothing():
    n, a, c = _plus_one()
    s = sl.create_schedule(c.op)
    s[c].set_store_predicate(sl.thread_axis("threadIdx.x").var.equal(0))
    s[c].set_store_predicate(sl.thread_axis("threadIdx.x").equal(0))
    assert len(s.records) == 1


def test_a_hardware_index_without_its_loop_is_named_at_lowering():
    n, a, c = _plus_one()
    s = sl.create_schedule(c.op)
    s[c].set_store_predicate(sl.thread_axis("threadIdx.x").var == 0)
    with pytest.raises(
        sl.ScheduleError,
        match=r"set_store_predicate\(\.\.\.\) at .*not inside a "
        "loop bound to threadIdx.x",
    ):
        sl.lower(s, [a, c])


def test_a_thread_axis_is_a_value_in_a_predicate_as_te_iter_var():
    n, a, c = _plus_one()
    s = sl.create_schedule(c.op)
    bx, tx = s[c].split(c.op.axis[0], factor=8)
    block, thread = sl.thread_axis("blockIdx.x"), sl.thread_axis("threadIdx.x")
    s[c].bind(bx, block)
    s[c].bind(tx, thread)
    s[c].set_store_predicate(sl.all(2 + block * 8 + thread < n, thread.equal(0) | (1 <= thread)))
    kernel = sl.build(s, [a, c], target="cuda")
    x = np.random.default_rng(2).random(29, dtype=np.float32)
    out = np.full(29, np.nan, np.float32)
    kernel.simulate(x, out)
    np.testing.assert_allclose(out[:27], x[:27] + 1, rtol=1e-6)
    assert np.isnan(out[27:]).all()
