"""`unroll_loops`: copies with constant indices, same results, a clear error for symbolic trips."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Buffer, For, LoweredFunc
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.visit import transform_stmt, walk_stmt
from schedlang.loopir.interpret import run
from schedlang.loopir.loops.unroll import unroll_loops

from .nests import loop_var, matmul_tail, store, tiled_matmul


def _unrolled(func: LoweredFunc) -> LoweredFunc:
    return LoweredFunc(func.name, func.params, func.sizes, unroll_loops(func.body))


def _kinds(func: LoweredFunc) -> set[str]:
    return {s.kind for s in walk_stmt(func.body) if isinstance(s, For)}


def test_unrolled_matmul_has_constant_copies_and_same_results():
    func = matmul_tail(4, "unrolled")
    unrolled = _unrolled(func)
    assert "unrolled" not in _kinds(unrolled)
    text = stmt_str(unrolled.body)
    assert "if i.outer * 4 < M:" in text
    assert "if i.outer * 4 + 3 < M:" in text
    assert "i.inner" not in text
    gen = np.random.default_rng(5)
    a = gen.uniform(-1, 1, (10, 7)).astype("float32")
    b = gen.uniform(-1, 1, (7, 3)).astype("float32")
    before, after = np.zeros((10, 3), "float32"), np.zeros((10, 3), "float32")
    run(func, [a, b, before])
    run(unrolled, [a, b, after])
    np.testing.assert_array_equal(before, after)


def test_unrolling_inside_thread_loops_keeps_results_and_barriers():
    func = tiled_matmul(4)
    inner = next(s for s in walk_stmt(func.body) if isinstance(s, For) and s.var.name == "k.inner")
    marked = LoweredFunc(
        func.name,
        func.params,
        func.sizes,
        _replace(func.body, inner, For(inner.var, inner.min, inner.extent, "unrolled", inner.body)),
    )
    unrolled = _unrolled(marked)
    assert "unrolled" not in _kinds(unrolled)
    assert stmt_str(unrolled.body).count("barrier()") == 2
    gen = np.random.default_rng(6)
    a = gen.uniform(-1, 1, (9, 6)).astype("float32")
    b = gen.uniform(-1, 1, (6, 7)).astype("float32")
    before, after = np.zeros((9, 7), "float32"), np.zeros((9, 7), "float32")
    run(func, [a, b, before])
    run(unrolled, [a, b, after])
    np.testing.assert_array_equal(before, after)


def test_inner_extent_may_depend_on_an_outer_unrolled_loop():
    out = Buffer("out", (const(4), const(4)), "int32")
    i, j = loop_var("i"), loop_var("j")
    triangle = For(
        i,
        const(0),
        const(4),
        "unrolled",
        For(j, const(0), i + 1, "unrolled", store(out, (i, j), i * 10 + j)),
    )
    func = LoweredFunc("f", (out,), (), triangle)
    unrolled = _unrolled(func)
    assert not any(isinstance(s, For) for s in walk_stmt(unrolled.body))
    assert stmt_str(unrolled.body).splitlines()[:3] == [
        "out[0, 0] = 0",
        "out[1, 0] = 10",
        "out[1, 1] = 11",
    ]
    before, after = np.zeros((4, 4), "int32"), np.zeros((4, 4), "int32")
    run(func, [before])
    run(unrolled, [after])
    np.testing.assert_array_equal(before, after)


def test_symbolic_extent_cannot_be_unrolled():
    n = sl.var("n")
    out = Buffer("out", (n,), "float32")
    i = loop_var("i.inner")
    loop = For(i, const(0), n - 1, "unrolled", store(out, (i,), const(1.0)))
    with pytest.raises(
        sl.LoweringError,
        match=r"cannot unroll the loop over 'i.inner': its extent n - 1 is not a constant.*"
        r"split the axis by a constant factor first",
    ):
        unroll_loops(loop)


def test_empty_unrolled_loop_vanishes():
    out = Buffer("out", (const(2),), "float32")
    i = loop_var("i")
    assert (
        stmt_str(unroll_loops(For(i, const(0), const(0), "unrolled", store(out, (i,), const(1.0)))))
        == "pass"
    )


def _replace(stmt, old: For, new: For):
    return transform_stmt(
        stmt, stmt_fn=lambda s: new if isinstance(s, For) and s.var is old.var else None
    )
