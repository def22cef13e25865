"""Elementwise loop nests from `tests.loopir.test_semantics`, rescheduled by hand: split into
vectorized lanes with a tail guard, or with the loop parallel."""

from __future__ import annotations

from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import For, If, LoweredFunc
from schedlang.loopir.core.visit import substitute_stmt
from tests.loopir.nests import loop_var
from tests.loopir.test_semantics import N, lower_elementwise


def split_elementwise(tensor, lanes: int, outer_kind: str = "serial") -> LoweredFunc:
    """``for io: for ii in [0, lanes) (vectorized): if i < n: C[i] = ...`` with i = io*lanes+ii."""
    func = lower_elementwise(tensor)
    loop = func.body
    io, ii = loop_var("i.outer"), loop_var("i.inner")
    i = io * lanes + ii
    body = If(i < N, substitute_stmt(loop.body, {loop.var: i}))
    inner = For(ii, const(0), const(lanes), "vectorized", body)
    outer = For(io, const(0), (N + (lanes - 1)) // lanes, outer_kind, inner)
    return LoweredFunc(func.name, func.params, func.sizes, outer)


def parallel_elementwise(tensor) -> LoweredFunc:
    """The elementwise loop, kind ``parallel``."""
    func = lower_elementwise(tensor)
    loop = func.body
    body = For(loop.var, loop.min, loop.extent, "parallel", loop.body)
    return LoweredFunc(func.name, func.params, func.sizes, body)
