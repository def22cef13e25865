"""Passes over unrolled code remember what they rewrote: a subtree shared by several
expressions is rewritten once, with the same result as rewriting every copy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from schedlang.ir import dtype as dt
from schedlang.ir.evaluate import _BINARY
from schedlang.ir.expr import Binary, Const, Var, const
from schedlang.ir.printer import expr_str
from schedlang.loopir.core.nodes import Buffer, For, Load, Seq, Store
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.simplify import _fold, _fold_constants, simplify
from schedlang.loopir.core.visit import transform_expr
from schedlang.loopir.index.divmod import simplify_divisions

i = Var("i", "int32", "loop")
j = Var("j", "int32", "loop")
A = Buffer("A", (const(64),), "float32")
C = Buffer("C", (const(64),), "float32")


def _index():
    """``(i * 8 + (j + 0)) % 8``: folds, and divides, under loops with constant bounds."""
    return Binary("%", i * 8 + (j + 0) * (const(2) - 1), const(8), "int32")


def test_memo_calls_fn_once_per_distinct_node():
    shared = i * 4 + 0
    e = Binary("+", shared, shared, "int32")
    seen: list[object] = []

    def fn(node):
        seen.append(node)

    transform_expr(e, fn)
    plain = len(seen)
    seen.clear()
    memo: dict = {}
    transform_expr(e, fn, memo)
    transform_expr(shared, fn, memo)  # a later expression: nothing new to rewrite
    assert plain == 11  # the five nodes of `shared` twice, then e
    assert len(seen) == 6  # once, then e
    assert len({id(n) for n in seen}) == len(seen)


def test_settled_results_are_found_by_a_later_call():
    calls = []

    def fold(node):
        calls.append(node)
        return _fold(node)

    memo: dict = {}
    first = transform_expr((i * 4 + 0) + j * 1, fold, memo, settle=True)
    assert expr_str(first) == "i * 4 + j"
    calls.clear()
    assert transform_expr(first, fold, memo, settle=True) is first
    assert calls == []


def test_a_result_rewritten_again_is_not_settled():
    def bump(node):  # not idempotent: a later call must rewrite its own results again
        return i + 1 if node is i else None

    memo: dict = {}
    first = transform_expr(i * 2, bump, memo, settle=True)
    second = transform_expr(first, bump, memo, settle=True)
    assert (expr_str(first), expr_str(second)) == ("(i + 1) * 2", "(i + 1 + 1) * 2")


def _nest(share: bool):
    """Copies of one store whose index is one object (`share`) or equal objects."""
    index = _index()
    stores = [
        Store(
            C, (index if share else _index(),), Load(A, (index if share else _index(),), "float32")
        )
        for _ in range(3)
    ]
    inner = For(j, const(0), const(8), "serial", Seq(tuple(stores)))
    return For(i, const(0), const(8), "serial", inner)


def test_simplify_and_divisions_same_with_shared_subtrees():
    for nest in (_nest(True), _nest(False)):
        out = stmt_str(simplify_divisions(simplify(nest)))
        assert out.count("C[j] = A[j]") == 3, out


INTS = ("int8", "int16", "int32", "int64", "uint8", "uint32")


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%", "min", "max"])
def test_integer_folds_match_numpy(dtype, op):
    lo, hi = dt.min_value(dtype), dt.max_value(dtype)
    values = sorted(v for v in {lo, lo + 1, -3, -1, 0, 1, 2, 7, hi - 1, hi} if lo <= v <= hi)
    np_type = dt.to_numpy(dtype)
    for x, y in itertools.product(values, repeat=2):
        got = _fold_constants(op, Const(x, dtype), Const(y, dtype), dtype)
        if op in ("//", "%") and y == 0:
            assert got is None
            continue
        with np.errstate(all="ignore"):
            want = _BINARY[op](np.array(x, np_type)[()], np.array(y, np_type)[()])
        assert expr_str(got) == str(int(want)), (x, op, y)
