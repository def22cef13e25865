"""Loops versioned on the guards of warpgroup products that do not change in them
(`loopir.loops.unswitch`): which guards move out, and that each version is the loop with the guard
decided."""

from __future__ import annotations

from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Buffer, For, If, MatrixOp, Seq, Store, Tile, seq
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.loops.unswitch import unswitch_products

from .nests import load, loop_var, store

Z, BLOCK, K, KI = loop_var("threadIdx.z"), loop_var("blockIdx.x"), loop_var("k"), loop_var("ki")
ACC = Buffer("acc", (const(64), const(64)), "float32", "wgmma.accumulator")
A = Buffer("A.shared", (const(64), const(16)), "float16", "shared")
B = Buffer("B.shared", (const(16), const(64)), "float16", "shared")
LOG = Buffer("log", (const(8),), "float32")


def _product(k=None) -> MatrixOp:
    k = const(0) if k is None else k
    tile = lambda buf, shape: Tile(buf, (const(0), k), (0, 1), shape)  # noqa: E731
    return MatrixOp(
        "mma",
        Tile(ACC, (const(0), const(0)), (0, 1), (64, 64)),
        (
            tile(A, (64, 16)),
            tile(B, (16, 64)),
        ),
    )


def _step(guarded) -> Store:
    return seq(store(LOG, (K,), load(LOG, K) + const(1.0, "float32")), guarded)


def test_a_guard_fixed_in_the_loop_versions_it():
    cond = Z < 1 - BLOCK
    loop = For(K, const(0), const(8), "serial", _step(If(cond, _product())))
    out = unswitch_products(loop)
    assert isinstance(out, If) and out.cond is cond
    holds, fails = out.then, out.otherwise
    assert isinstance(holds, For) and isinstance(fails, For)
    assert isinstance(holds.body, Seq) and isinstance(holds.body.stmts[1], MatrixOp)
    assert isinstance(fails.body, Store)  # the product dropped with its guard
    assert "if" not in stmt_str(holds) and "wgmma" not in stmt_str(fails)


def test_an_inner_loop_left_empty_is_dropped():
    cond = Z < 1 - BLOCK
    inner = For(KI, const(0), const(4), "unrolled", If(cond, _product(KI * 16)))
    out = unswitch_products(For(K, const(0), const(8), "serial", _step(inner)))
    assert isinstance(out.then.body.stmts[1], For)
    assert isinstance(out.otherwise.body, Store)


def test_guards_that_change_in_the_loop_stay():
    for cond in (K < 5, Z < load(LOG, 0).astype("int32")):  # the loop's variable; memory
        loop = For(K, const(0), const(8), "serial", _step(If(cond, _product())))
        assert stmt_str(unswitch_products(loop)) == stmt_str(loop)


def test_guards_of_other_statements_stay():
    loop = For(K, const(0), const(8), "serial", If(Z < 1, store(LOG, (K,), const(2.0))))
    assert stmt_str(unswitch_products(loop)) == stmt_str(loop)


def test_the_outermost_loop_it_is_fixed_in():
    cond = Z < 1 - BLOCK
    nest = For(
        BLOCK,
        const(0),
        const(2),
        "serial",
        For(K, const(0), const(8), "serial", _step(If(cond, _product()))),
    )
    out = unswitch_products(nest)
    assert isinstance(out, For) and out.var is BLOCK  # the condition reads the outer loop's
    assert isinstance(out.body, If) and isinstance(out.body.then, For)
