"""Which shared buffers are done with before a later statement (`loopir.memory.shared_reuse`):
their every access comes first in program order, and no serial loop that holds that statement
holds one of them."""

from __future__ import annotations

from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Allocate, Buffer, For, MBarrier, seq
from schedlang.loopir.memory.shared_reuse import finished_before

from .nests import load, loop_var, store


def _shared(name: str, n: int) -> Buffer:
    return Buffer(name, (const(n),), "float32", "shared")


def _kernel(around: bool):
    """A fills and reads its buffer, then B writes another; with `around`, a serial loop
    holds both (a persistent block's loop over tiles)."""
    a, b, out = _shared("A", 64), _shared("B", 16), Buffer("Out", (const(64),), "float32")
    i, t = loop_var("i"), loop_var("t")
    fill = For(i, const(0), const(64), "serial", store(a, [i], load(out, i)))
    later = store(b, [0], load(out, 0))
    body = seq(fill, store(out, [0], load(a, 3)), later)
    if around:
        body = For(t, const(0), const(4), "serial", body)
    return Allocate(a, Allocate(b, body)), a, later


def test_a_buffer_read_for_the_last_time_is_free_after():
    kernel, a, later = _kernel(around=False)
    assert finished_before(kernel, [later]) == [(a, 256)]


def test_not_free_where_a_loop_comes_back_to_it():
    kernel, _, later = _kernel(around=True)
    assert finished_before(kernel, [later]) == []


def test_not_free_before_its_last_access():
    a = _shared("A", 8)
    first = store(a, [0], load(a, 1))
    kernel = Allocate(a, seq(first, store(a, [1], load(a, 0))))
    assert finished_before(kernel, [first]) == []


def test_a_memory_barrier_array_is_never_free():
    """Its barriers are initialised once and would need invalidating before reuse."""
    kernel, a, later = _kernel(around=False)
    flags = Buffer("flags", (const(2),), "int64", "shared")
    init = MBarrier("init", flags, const(0), count=1)
    kernel = Allocate(flags, seq(init, kernel))
    assert finished_before(kernel, [later]) == [(a, 256)]


def test_a_statement_met_twice_counts_where_it_stands_first():
    """A subtree two branches share: B's store stands before A's last read in the first copy,
    so A is not free there, though the second copy comes after it."""
    a, b, out = _shared("A", 8), _shared("B", 8), Buffer("Out", (const(8),), "float32")
    later = store(b, [0], load(out, 0))
    body = seq(later, store(out, [0], load(a, 1)), later)
    assert finished_before(Allocate(a, Allocate(b, body)), [later]) == []
