"""A register state picked by a loop's parity kept as two register sets that swap each step
(`gpu.rotate_parity`): the same values, run by the interpreter, and the buffers left alone."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.ir.expr import Binary, Var, const
from schedlang.loopir.core.nodes import (
    Allocate,
    Buffer,
    For,
    Load,
    LoweredFunc,
    Seq,
    Store,
)
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.visit import stmt_exprs, walk_expr, walk_stmt
from schedlang.loopir.gpu.rotate_parity import rotate_parity
from schedlang.loopir.interpret import run

J = Var("j", "int32", "axis")
V = Var("v", "int32", "axis")
OUT = Buffer("out", (const(16), const(2)), "float32")


def _parity(offset: int, size: int, rest) -> Binary:
    """``((j + offset) % 2) * size + rest``."""
    at = J if offset == 0 else Binary("+", J, const(offset), "int32")
    half = Binary("*", Binary("%", at, const(2), "int32"), const(size), "int32")
    return Binary("+", half, rest, "int32")


def _running(lo: int, steps: int, state: Buffer) -> LoweredFunc:
    """A running state of two values a step, this step's from the last one's:
    ``M[j % 2][v] = M[(j - 1) % 2][v] * 0.5 + j + v``, written out each step, and both
    halves after the loop."""

    new = Binary(
        "+",
        Binary("*", Load(state, (_parity(-1, 2, V),), "float32"), const(0.5, "float32"), "float32"),
        Binary("+", J, V, "int32").astype("float32"),
        "float32",
    )
    step = Seq(
        (
            For(V, const(0), const(2), "unrolled", Store(state, (_parity(0, 2, V),), new)),
            For(
                V,
                const(0),
                const(2),
                "unrolled",
                Store(OUT, (J, V), Load(state, (_parity(2, 2, V),), "float32")),
            ),
        )
    )
    first = [Store(state, (const(k),), const(float(k + 1), "float32")) for k in range(4)]
    after = [
        Store(OUT, (const(15), const(k % 2)), Load(state, (const(k),), "float32")) for k in (1, 2)
    ]
    loop = For(J, const(lo), const(steps), "serial", step)
    return LoweredFunc("f", (OUT,), (), Allocate(state, Seq((*first, loop, *after))))


@pytest.mark.parametrize(("lo", "steps"), [(1, 6), (2, 5), (0, 0), (3, 1)])
def test_the_rotated_state_computes_what_the_halves_did(lo, steps):
    state = Buffer("M", (const(4),), "float32", "local")
    func = _running(lo, steps, state)
    rotated = rotate_parity(func.body)
    (loop,) = [s for s in walk_stmt(rotated) if isinstance(s, For) and s.var is J]
    inside = [
        x.buffer.name
        for s in walk_stmt(loop)
        for e in stmt_exprs(s)
        for x in walk_expr(e)
        if isinstance(x, Load)
    ]
    inside += [s.buffer.name for s in walk_stmt(loop) if isinstance(s, Store)]
    assert {"M.cur", "M.prev"} <= set(inside) and "M" not in inside  # the array outside only
    want, got = np.full((16, 2), np.nan, np.float32), np.full((16, 2), np.nan, np.float32)
    run(func, [want])
    run(LoweredFunc(func.name, func.params, func.sizes, rotated), [got])
    np.testing.assert_array_equal(got, want)


def test_a_state_read_otherwise_stays_an_array():
    """One access not picked by the parity (the whole array at a step's index) keeps the
    buffer as it was."""
    state = Buffer("M", (const(4),), "float32", "local")
    func = _running(1, 6, state)
    loop = func.body.body.stmts[4]
    odd = Store(OUT, (J, const(0)), Load(state, (J % 4,), "float32"))
    body = Allocate(
        state, Seq((loop.__class__(J, loop.min, loop.extent, "serial", Seq((loop.body, odd))),))
    )
    assert stmt_str(rotate_parity(body)) == stmt_str(body)
