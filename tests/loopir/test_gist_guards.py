"""Guards and selects of register tiles reduced to what their loops and the guards around them
leave open (`loops.gist_guards`): causal attention's diagonal step, where each element's mask
comes with the keys' bound and a warpgroup's test that the loops' ranges and the mask itself
imply. Each simplified condition is checked against the original at every point of its
loops."""

from __future__ import annotations

import itertools

from schedlang.ir.expr import Compare, Const, Select, Var, const, logical
from schedlang.ir.visit import substitute, walk
from schedlang.loopir.core.nodes import Buffer, For, If, Load, MatrixOp, Store, Tile, seq
from schedlang.loopir.core.simplify import simplify_expr
from schedlang.loopir.core.visit import walk_expr, walk_stmt
from schedlang.loopir.loops.gist_guards import gist_guards

I32 = "int32"
OUT = Buffer("out", (const(64),), "float32")
SRC = Buffer("src", (const(64),), "float32")


def _value(e, at):
    """`e` at the point `at` (variable -> value), folded to a constant."""
    folded = simplify_expr(substitute(e, {v: const(x, I32) for v, x in at.items()}))
    assert isinstance(folded, Const), folded
    return bool(folded.value)


def _product():
    """A warpgroup's product: the pass looks at kernels of the tensor cores' fragments only."""
    acc = Buffer("acc", (const(64), const(64)), "float32", "wgmma.accumulator")
    a, b = (Buffer(x, (const(64), const(64)), "float16", "shared") for x in "ab")
    tile = lambda buffer: Tile(buffer, (const(0), const(0)), (0, 1), (64, 64))  # noqa: E731
    return MatrixOp("mma", tile(acc), (tile(a), tile(b)))


def _loop(var, n, body, thread=None, kind="unrolled"):
    return For(var, const(0, I32), const(n, I32), "bound" if thread else kind, body, thread)


def _diagonal():
    """The diagonal step of a block of 128 rows (two warpgroups of 64) and 128 keys, at
    ``n`` = 1024: the guard on the warpgroup's rows around the element's own mask."""
    i, wg, lane, warp = (Var(name, I32, "loop") for name in ("i", "wg", "lane", "warp"))
    h, e = Var("h", I32, "loop"), Var("e", I32, "loop")
    key = lane % 4 * 2 + 8 * h + e + 128 * (i + 1) - 128
    row = 128 * i + warp * 16 + lane // 4 + 64 * wg
    mask = logical("and", (key < 1024, key <= row))
    live = wg >= (-(warp * 16) - lane // 4 + lane % 4 * 2 + 8 * h + e - 1) // 64
    store = Store(OUT, (lane * 2 + e,), Load(SRC, (lane * 2 + e,), "float32"))
    body = seq(If(live, If(mask, store)), _product())
    loops = [(i, 8, "blockIdx.x"), (wg, 2, "threadIdx.z"), (lane, 32, "threadIdx.x")]
    loops += [(warp, 4, "threadIdx.y"), (h, 4, None), (e, 2, None)]
    for var, n, thread in reversed(loops):
        body = _loop(var, n, body, thread)
    return body, [(v, n) for v, n, _ in loops]


def _guards(stmt):
    return [s.cond for s in walk_stmt(stmt) if isinstance(s, If)]


def _holds(conds, at):
    return all(_value(c, at) for c in conds)


def test_the_diagonal_mask_is_one_comparison_that_holds_where_the_original_does():
    nest, loops = _diagonal()
    simplified = gist_guards(nest)
    (cond,) = _guards(simplified)  # the warpgroup's test is implied by the element's
    assert isinstance(cond, Compare)  # the keys' bound is implied by the block's range
    names = {x.name for x in walk(cond) if isinstance(x, Var)}
    assert "i" not in names  # the block cancels: a thread's value against a constant
    before = _guards(nest)
    ranges = [(0, n - 1) if v.name == "i" else range(n) for v, n in loops]  # first, last block
    for point in itertools.product(*ranges):
        at = dict(zip((v for v, _ in loops), point))
        assert _holds(before, at) == _value(cond, at), at


def test_a_guard_that_fails_somewhere_stays_and_one_never_true_goes_with_its_body():
    t = Var("t", I32, "loop")
    fails = seq(_loop(t, 8, If(t < 5, Store(OUT, (t,), const(1.0, "float32")))), _product())
    assert _guards(gist_guards(fails)) == _guards(fails)
    never = seq(_loop(t, 8, If(t > 9, Store(OUT, (t,), const(1.0, "float32")))), _product())
    assert not any(isinstance(s, Store) for s in walk_stmt(gist_guards(never)))


def test_conditions_outside_element_loops_or_without_products_are_left_alone():
    t = Var("t", I32, "loop")
    always = _loop(t, 8, If(t < 9, Store(OUT, (t,), const(1.0, "float32"))), kind="serial")
    assert _guards(gist_guards(seq(always, _product()))) == _guards(always)
    unrolled = _loop(t, 8, If(t < 9, Store(OUT, (t,), const(1.0, "float32"))))
    assert _guards(gist_guards(unrolled)) == _guards(unrolled)  # no products: left alone


def test_a_select_under_a_guard_is_decided_by_it():
    t = Var("t", I32, "loop")
    value = Select(t < 6, Load(SRC, (t,), "float32"), const(0.0, "float32"), "float32")
    nest = seq(_loop(t, 8, If(t < 4, Store(OUT, (t,), value))), _product())
    selects = [
        n for s in walk_stmt(gist_guards(nest)) for n in walk_expr(getattr(s, "value", const(0)))
    ]
    assert not any(isinstance(n, Select) for n in selects)
    assert _guards(gist_guards(nest)) == _guards(nest)
