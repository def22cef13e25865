"""`simplify` and `simplify_expr`: exact folding, trivial statements gone, results unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import Cast, Compare, Const, Var, const
from schedlang.ir.printer import expr_str
from schedlang.loopir.core.nodes import Barrier, Buffer, For, If, Let, LoweredFunc, Seq, seq
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.simplify import simplify, simplify_expr
from schedlang.loopir.interpret import run

from .nests import loop_var, matmul_tail, staged_rotate, store, tiled_matmul

x = Var("x", "int32", "loop")
n = sl.var("n")


@pytest.mark.parametrize(
    "expr, expected",
    [
        (const(-7) // 2, "-4"),
        (const(-7) % 2, "1"),
        (const(7) % -2, "-1"),
        (const(2147483647) + 1, "-2147483648"),
        (const(65536) * 65536, "0"),
        (const(200, "uint8") + const(100, "uint8"), "44"),
        (sl.minimum(const(3), const(-2)) + sl.maximum(const(3), const(-2)), "1"),
        (x + 0, "x"),
        (0 + x * 1, "x"),
        (x * 0 + n, "n"),
        (x // 1 + x % 1, "x"),
        (2 + (n - 2), "n"),
        (x + 3 - 1, "x + 2"),
        (x - 3 + 1, "x - 2"),
        ((x + 1) * 4 + 0, "(x + 1) * 4"),
        (const(3) < 4, "True"),
        (sl.all(x < n, const(1) == 1), "x < n"),
        (sl.any(x < n, const(1) == 1), "True"),
        (~(const(2) > 1), "False"),
        (sl.if_then_else(const(1) > 2, x, n), "n"),
        (Cast(const(300), "int8"), "44"),
        (x // 0, "x // 0"),
        (const(5) % 0, "5 % 0"),
        (x.astype("float32") * 0.0, "float32(x) * 0.0"),
    ],
)
def test_simplify_expr(expr, expected):
    folded = simplify_expr(expr)
    assert expr_str(folded) == expected
    assert folded.dtype == expr.dtype


def test_folded_constants_keep_their_dtype():
    folded = simplify_expr(const(5, "int64") * 3)
    assert isinstance(folded, Const) and folded.dtype == "int64" and folded.value == 15


def test_trivial_statements_disappear():
    out = Buffer("out", (n,), "float32")
    i, j, t = loop_var("i"), loop_var("j"), loop_var("t")
    nest = seq(
        If(const(1) > 2, store(out, (0,), const(1.0))),
        For(i, const(0), const(0), "serial", store(out, (i,), const(2.0))),
        For(j, const(3), const(1), "vectorized", store(out, (j + 0,), const(3.0))),
        Let(t, const(4), If(t < 5, store(out, (t,), const(4.0)), Barrier())),
        Seq((Seq(()), Seq((Barrier(),)))),
    )
    assert stmt_str(simplify(nest)) == "out[3] = 3.0\nout[4] = 4.0\nbarrier()"


def test_loops_bound_to_threads_keep_extent_one():
    out = Buffer("out", (n,), "float32")
    tx = loop_var("tx")
    bound = For(tx, const(0), const(1), "bound", store(out, (tx,), const(1.0)), "threadIdx.x")
    assert isinstance(simplify(bound), For)
    empty = simplify(If(x < n, Seq(())))
    assert isinstance(empty, Seq) and not empty.stmts


def test_empty_then_branch_becomes_negated_guard():
    out = Buffer("out", (n,), "float32")
    guard = simplify(If(x < n, Seq(()), store(out, (0,), const(1.0))))
    assert stmt_str(guard) == "if not x < n:\n  out[0] = 1.0"


def _run_both(func: LoweredFunc, arrays: list[np.ndarray]) -> None:
    simple = LoweredFunc(func.name, func.params, func.sizes, simplify(func.body))
    before = [a.copy() for a in arrays]
    after = [a.copy() for a in arrays]
    run(func, before)
    run(simple, after)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("factor", [1, 3])
def test_simplify_preserves_results(factor):
    gen = np.random.default_rng(factor)
    a = gen.uniform(-1, 1, (11, 6)).astype("float32")
    b = gen.uniform(-1, 1, (6, 5)).astype("float32")
    _run_both(matmul_tail(factor, "serial"), [a, b, np.full((11, 5), np.nan, "float32")])
    _run_both(tiled_matmul(4), [a, b, np.full((11, 5), np.nan, "float32")])
    _run_both(staged_rotate(8), [a[:, 0].copy(), np.zeros(11, "float32")])


def test_extent_one_loop_is_replaced_by_its_body():
    simple = simplify(matmul_tail(1, "serial").body)
    text = stmt_str(simple)
    assert "i.inner" not in text
    assert "C[i.outer, j] = C[i.outer, j] + A[i.outer, k] * B[k, j]" in text
    assert "for i.outer in range(0, M):  # parallel" in text


y = Var("y", "int32", "loop")


@pytest.mark.parametrize(
    "expr, expected",
    [
        (8 * y + 7 - 8 * y, "7"),
        (-5 * x + 20 + 0 * y - 0, "-5 * x + 20"),
        ((-5 * x + 20) + (x - x), "-5 * x + 20"),
        (x * 3 + y - x * 3 - y, "0"),
        (x + x - 2 * x + y, "y"),
        (4 * x - (4 * x + y), "-y"),
    ],
    ids=str,
)
def test_cancelling_sums(expr, expected):
    assert expr_str(simplify_expr(expr)) == expected


def test_cancelled_sums_keep_their_values():
    """Random sums of scaled terms keep their value (int32, wrapping) after simplification."""
    from itertools import product

    gen = np.random.default_rng(7)
    terms = [x, y, x * 3, -5 * x, y * -2, x // 2, const(7), const(-3)]
    for _ in range(300):
        expr = terms[gen.integers(len(terms))]
        for _ in range(gen.integers(1, 5)):
            other = terms[gen.integers(len(terms))]
            expr = expr + other if gen.random() < 0.5 else expr - other
        simple = simplify_expr(expr)
        for xv, yv in product([-7, 0, 5, 2**31 - 1], [-3, 11]):
            env = {"x": xv, "y": yv}
            assert _eval(simple, env) == _eval(expr, env), expr_str(expr)


def _eval(e, env):
    code = expr_str(e)
    for name, value in env.items():
        code = code.replace(name, f"np.int32({value})")
    with np.errstate(over="ignore"):
        return eval(code, {"np": np})  # the printer writes Python-compatible integer expressions


@pytest.mark.parametrize(("op", "holds"), [("<", False), ("<=", True), ("==", True), ("!=", False)])
def test_a_comparison_of_one_sum_with_itself_is_decided(op, holds):
    """``i + 2 < 2 + i``: the same terms and constant, the same value even past overflow; a
    comparison of sums that differ (by a constant or a term) stays, as overflow could decide
    it either way."""
    i, j = Var("i", "int32", "loop"), Var("j", "int32", "loop")
    decided = simplify_expr(Compare(op, i + 2, 2 + i))
    assert isinstance(decided, Const) and bool(decided.value) is holds
    assert not isinstance(simplify_expr(Compare(op, i + 1, i + 2)), Const)
    assert not isinstance(simplify_expr(Compare(op, i + j, i + 2)), Const)
