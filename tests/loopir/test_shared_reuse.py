"""Which shared buffers are done with before a later statement (`loopir.memory.shared_reuse`):
their every access comes first in program order, and no serial loop that holds that statement
holds one of them."""

from __future__ import annotations

from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Allocate, Buffer, For, If, seq
from schedlang.loopir.memory.shared_reuse import finished_before, uniform_path

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


def test_a_guard_on_the_way_parts_the_threads():
    a = _shared("A", 8)
    inner = store(a, [0], load(a, 1))
    guarded = If(load(a, 2) > 0.0, inner)
    assert uniform_path([guarded, inner]) is False
    assert uniform_path([inner]) is True
