"""Guards and selects true at every point of their loops are dropped (`loops.true_guards`), and
only those: a condition that fails somewhere, or that cannot be decided (a range not constant,
a term that is not affine), stays."""

from __future__ import annotations

from schedlang.ir.expr import Compare, Select, Var, const, logical
from schedlang.loopir.core.nodes import Buffer, For, If, Load, Store
from schedlang.loopir.core.visit import walk_expr, walk_stmt
from schedlang.loopir.loops.true_guards import drop_true_guards

I32 = "int32"
OUT = Buffer("out", (const(256),), "float32")
SRC = Buffer("src", (const(256),), "float32")


def _loop(var, lo, n, body):
    return For(var, const(lo, I32), const(n, I32), "serial", body)


def _store(cond):
    t, e = Var("t", I32, "loop"), Var("e", I32, "loop")
    key = (t - 1) * 64 + e
    value = Select(cond(t, e, key), Load(SRC, (key,), "float32"), const(0.0, "float32"), "float32")
    return t, e, Store(OUT, (key,), value)


def _selects(stmt):
    return [
        n
        for s in walk_stmt(stmt)
        if isinstance(s, Store)
        for n in walk_expr(s.value)
        if isinstance(n, Select)
    ]


def test_a_select_true_over_the_steps_and_the_block_is_dropped():
    t, e, store = _store(lambda t, e, key: logical("and", (t >= 1, key < 256)))
    nest = _loop(t, 1, 4, _loop(e, 0, 64, store))
    assert _selects(nest) and not _selects(drop_true_guards(nest))


def test_one_that_fails_at_the_last_block_stays():
    t, e, store = _store(lambda t, e, key: key < 250)
    nest = _loop(t, 1, 4, _loop(e, 0, 64, store))
    assert _selects(drop_true_guards(nest))


def test_guards_over_a_lanes_remainder_and_unknown_ranges():
    lane, n = Var("lane", I32, "loop"), Var("n", I32)
    inside = Compare("<", lane % 4 * 2 + 1, const(8, I32))  # (lane % 4) * 2 + 1 <= 7
    guarded = For(
        lane,
        const(0, I32),
        const(32, I32),
        "bound",
        If(inside, Store(OUT, (lane,), const(1.0, "float32"))),
        "threadIdx.x",
    )
    assert not any(isinstance(s, If) for s in walk_stmt(drop_true_guards(guarded)))
    unknown = For(
        lane,
        const(0, I32),
        n,
        "serial",
        If(Compare("<", lane, const(8, I32)), Store(OUT, (lane,), const(1.0, "float32"))),
    )
    assert any(isinstance(s, If) for s in walk_stmt(drop_true_guards(unknown)))
