"""`simplify_divisions`: ``//`` and ``%`` by constants that the loop bounds make trivial."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import Var, const
from schedlang.ir.printer import expr_str
from schedlang.loopir.core.nodes import Buffer, For, LoweredFunc, Store
from schedlang.loopir.core.nodes import Load as L
from schedlang.loopir.index.divmod import simplify_divisions
from schedlang.loopir.interpret import run

jo = Var("jo", "int32", "loop")
ji = Var("ji", "int32", "loop")
n = Var("n", "int32", "size")


def nest(index, ji_extent=32, jo_extent=4):
    out = Buffer("out", (const(jo_extent * ji_extent),), "int32")
    body = Store(out, (jo * ji_extent + ji,), index)
    inner = For(ji, const(0), const(ji_extent), "serial", body)
    return out, For(jo, const(0), const(jo_extent), "serial", inner)


def stored(stmt) -> str:
    return expr_str(stmt.body.body.value)


@pytest.mark.parametrize(
    "index, expected",
    [
        ((32 * jo + ji) // 32, "jo"),
        ((32 * jo + ji) % 32, "ji"),
        ((ji + jo * 64) // 32, "2 * jo"),
        ((ji + jo * 64 + 5) // 32, "(ji + jo * 64 + 5) // 32"),  # ji + 5 may reach 32
        ((ji + 64 * jo) % 32, "ji"),
        (ji // 32, "0"),
        ((32 * jo + ji + 1) // 32, "(32 * jo + ji + 1) // 32"),  # ji + 1 may reach 32
        ((32 * jo + ji) // n, "(32 * jo + ji) // n"),  # not a constant divisor
        ((32 * jo - ji) // 32, "(32 * jo - ji) // 32"),  # negative remainder
        ((64 * (jo % 2) + ji) % 32, "ji"),  # a multiple of 32 drops out, whatever it is
        ((64 * (jo % 2) + ji) // 32, "2 * (jo % 2)"),
        ((ji + (jo % 2)) % 32, "(ji + jo % 2) % 32"),  # jo % 2 is part of the remainder
    ],
    ids=str,
)
def test_rewrites(index, expected):
    _, stmt = nest(index)
    assert stored(simplify_divisions(stmt)) == expected


def test_values_unchanged():
    """Every rewrite keeps the value the interpreter computes (floor semantics)."""
    for index in [
        (32 * jo + ji) // 32,
        (ji + 64 * jo + 5) % 32,
        (3 * ji + 8) // 4,
        (ji - 5) % 7,
        (16 * (jo % 3) - ji) // 8,
    ]:
        out, stmt = nest(index, ji_extent=8)
        results = []
        for body in (stmt, simplify_divisions(stmt)):
            arr = np.zeros(32, np.int32)
            run(LoweredFunc("f", (out,), (), body), [arr])
            results.append(arr)
        np.testing.assert_array_equal(results[0], results[1])


def test_load_indices_too():
    src = Buffer("src", (const(4), const(32)), "int32")
    _, stmt = nest(L(src, ((32 * jo + ji) // 32, (32 * jo + ji) % 32), "int32"))
    assert stored(simplify_divisions(stmt)) == "src[jo, ji]"


def test_a_loaded_value_is_not_folded_out_of_a_division():
    """``(A[i] * 4 + j) // 4`` is not ``A[i]`` when the product wraps in int32, nor
    ``(A[i] * 3 + j) % 3`` ``j``: only index arithmetic of loops and sizes is folded."""
    a = sl.placeholder((2,), name="A", dtype="int32")
    c = sl.compute((2, 4), lambda i, j: (a[i] * 4 + j) // 4, name="C")
    d = sl.compute((2, 3), lambda i, j: (a[i] * 3 + j) % 3, name="D")
    values = np.array([1 << 30, 1_000_000_000], np.int32)
    for t in (c, d):
        func = sl.lower(sl.create_schedule(t), [a, t])
        want = sl.evaluate(t, {a: values})
        got = np.full(want.shape, -7, np.int32)
        run(func, [values, got])
        np.testing.assert_array_equal(got, want)
