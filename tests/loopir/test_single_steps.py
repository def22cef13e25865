"""A serial loop whose extent isl proves 1 wherever it is reached becomes its body
(`loops.single_steps`): a persistent block's causal diagonal step, whose bounds come in two
forms; a loop that may run twice, or whose bounds isl cannot state, stays."""

from __future__ import annotations

from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import Buffer, For, Load, Store
from schedlang.loopir.core.simplify import simplify_expr
from schedlang.loopir.core.visit import substitute_expr, walk_expr, walk_stmt
from schedlang.loopir.loops.single_steps import peel_single_steps

I32 = "int32"
OUT = Buffer("out", (const(4096),), "int32")
STEPS = Buffer("steps", (const(1),), "int32")


def _tiles(step_min, step_extent):
    """A block's tiles ``t = b + 132 * k`` around a loop over ``j`` storing ``j``."""
    b, k, j = (Var(name, I32, "loop") for name in ("b", "k", "j"))
    t = b + k * 132
    step = For(j, step_min(t), step_extent(t), "serial", Store(OUT, (t,), j))
    tiles = For(k, const(0, I32), const(17, I32) - (b + 196) // 132, "serial", step)
    return For(b, const(0, I32), const(132, I32), "bound", tiles, "blockIdx.x"), j


def _loops(stmt):
    return [s.var.name for s in walk_stmt(stmt) if isinstance(s, For)]


def test_a_diagonal_step_in_two_forms_is_its_body():
    low = lambda t: t - (t // 32) * 32 + 1  # noqa: E731
    high = lambda t: const(33, I32) - (const(2047, I32) - t) % 32  # noqa: E731
    nest, j = _tiles(low, lambda t: high(t) - low(t))
    peeled = peel_single_steps(nest)
    assert _loops(peeled) == ["b", "k"]
    (store,) = [s for s in walk_stmt(peeled) if isinstance(s, Store)]
    assert j not in set(walk_expr(store.value))  # the step's value, its first one
    b, k = (s.var for s in walk_stmt(peeled) if isinstance(s, For))
    for tile in ((5, 3), (131, 15)):
        at = dict(zip((b, k), (const(x, I32) for x in tile)))
        value = simplify_expr(substitute_expr(store.value, at))
        assert value.value == (tile[0] + 132 * tile[1]) % 32 + 1


def test_a_loop_that_may_run_twice_or_whose_bounds_are_loaded_stays():
    nest, _ = _tiles(lambda t: t % 32, lambda t: 1 + t % 2)  # twice at odd tiles
    assert _loops(peel_single_steps(nest)) == ["b", "k", "j"]
    loaded = Load(STEPS, (const(0, I32),), I32)
    nest, _ = _tiles(lambda t: t % 32, lambda t: loaded - loaded + 1)
    assert _loops(peel_single_steps(nest)) == ["b", "k", "j"]
