"""Long chains of stages: each intermediate buffer is allocated in one walk of the loop nest
(one walk per buffer took cubic time: 69 s at 300 stages), and the nest of their allocations,
as deep as the chain, is walked by every later pass and printed without a RecursionError."""

from __future__ import annotations

import time

import numpy as np

import schedlang as sl
from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import Allocate, Buffer, For, Load, Seq, Store
from schedlang.loopir.memory.allocate import insert_allocations


def _chain(n: int, size: int = 5):
    def plus_one(prev):
        return lambda i: prev[i] + 1.0

    a = sl.placeholder((size,), name="A")
    t = a
    for k in range(n):
        t = sl.compute((size,), plus_one(t), name=f"T{k}")
    return a, t


def test_allocations_of_a_chain_of_3000_buffers_take_one_walk():
    buffers = [Buffer(f"T{k}", (const(4, "int32"),), "float32", "global") for k in range(3001)]
    loops = []
    for k in range(1, len(buffers)):
        i = Var(f"i{k}", "int32", "loop")
        store = Store(buffers[k], (i,), Load(buffers[k - 1], (i,), "float32"))
        loops.append(For(i, const(0, "int32"), const(4, "int32"), "serial", store))
    groups = [(b,) for b in buffers[1:-1]]
    start = time.perf_counter()
    body = insert_allocations(Seq(tuple(loops)), groups)
    assert time.perf_counter() - start < 5
    for (buffer,) in groups:  # each used by two loops: around the whole sequence, in order
        assert isinstance(body, Allocate) and body.buffer is buffer
        body = body.body
    assert body.stmts == tuple(loops)


def test_a_buffer_used_by_one_loop_is_allocated_inside_it():
    a, b, c = (Buffer(n, (const(4, "int32"),), "float32", "global") for n in "ABC")
    i, j = Var("i", "int32", "loop"), Var("j", "int32", "loop")
    first = For(i, const(0, "int32"), const(4, "int32"), "serial", Store(b, (i,), const(1.0)))
    second = For(j, const(0, "int32"), const(4, "int32"), "serial", Store(c, (j,), const(2.0)))
    body = insert_allocations(Seq((first, second)), [(b,)])
    assert body.stmts[1] is second
    assert isinstance(body.stmts[0].body, Allocate) and body.stmts[0].body.buffer is b


def test_a_chain_of_300_stages_builds_in_seconds_and_matches():
    a, t = _chain(300)
    s = sl.create_schedule(t)
    start = time.perf_counter()
    kernel = sl.build(s, [a, t], target="cpu")
    assert time.perf_counter() - start < 30  # 69 s in insert_allocations alone before
    x = np.random.default_rng(3).uniform(0.5, 2.0, 5).astype("float32")
    out = np.full(5, np.nan, "float32")
    kernel(x, out)
    np.testing.assert_allclose(out, sl.evaluate(t, {a: x}), rtol=1e-5)


def test_a_chain_of_600_stages_lowers_and_prints():
    a, t = _chain(600)
    s = sl.create_schedule(t)
    text = str(sl.lower(s, [a, t]))  # a RecursionError before
    assert text.count("allocate") == 599
