"""Printed expressions and tensor definitions: readable, with only the parentheses Python needs."""

from __future__ import annotations

import pytest

import schedlang as sl


@pytest.fixture
def abc():
    A = sl.placeholder((7,), name="A")
    return A[0], A[1], A[2]


@pytest.fixture
def ints():
    I = sl.placeholder((7,), "int32", name="I")
    return I[0], I[1], I[2]


def test_matmul():
    M, K, N = sl.var("M"), sl.var("K"), sl.var("N")
    A = sl.placeholder((M, K), name="A")
    B = sl.placeholder((K, N), name="B")
    k = sl.reduce_axis((0, K), name="k")
    C = sl.compute((M, N), lambda i, j: sl.sum(A[i, k] * B[k, j], axis=k), name="C")
    assert str(C) == "C[i, j] = sum(A[i, k] * B[k, j], k in [0, K))"
    assert str(A) == "A = placeholder((M, K), float32)"
    assert str(B) == "B = placeholder((K, N), float32)"
    assert C._repr_markdown_() == f"```\n{C}\n```"


def test_placeholder():
    assert str(sl.placeholder((7,), "int8", name="V")) == "V = placeholder((7,), int8)"
    n = sl.var("n")
    P = sl.placeholder((n + 2, 3), "bfloat16", name="P")
    assert str(P) == "P = placeholder((n + 2, 3), bfloat16)"


def test_minimal_parentheses_for_arithmetic(abc):
    a, b, c = abc
    cases = [
        ((a + b) * c, "(A[0] + A[1]) * A[2]"),
        (a + b * c, "A[0] + A[1] * A[2]"),
        (a * b + c, "A[0] * A[1] + A[2]"),
        (a - (b - c), "A[0] - (A[1] - A[2])"),
        (a - b - c, "A[0] - A[1] - A[2]"),
        (a - (b + c), "A[0] - (A[1] + A[2])"),
        (a + (b + c), "A[0] + (A[1] + A[2])"),
        (a / (b * c), "A[0] / (A[1] * A[2])"),
        (a / b * c, "A[0] / A[1] * A[2]"),
        (a // b % c, "A[0] // A[1] % A[2]"),
        (a % (b // c), "A[0] % (A[1] // A[2])"),
        (-a, "-A[0]"),
        (-(a + b), "-(A[0] + A[1])"),
        (-a * b, "-A[0] * A[1]"),
        (a * -b, "A[0] * -A[1]"),
        (a * 2.0 + 1.5, "A[0] * 2.0 + 1.5"),
        (1.0 - a, "1.0 - A[0]"),
        (a - -2.0, "A[0] - -2.0"),
    ]
    for expr, text in cases:
        assert str(expr) == text


def test_bitwise_and_shifts(ints):
    x, y, z = ints
    assert str((x & y) | z) == "I[0] & I[1] | I[2]"
    assert str(x & (y | z)) == "I[0] & (I[1] | I[2])"
    assert str(x ^ y & z) == "I[0] ^ I[1] & I[2]"
    assert str((x + 1) << 2) == "I[0] + 1 << 2"
    assert str(x << (y >> 1)) == "I[0] << (I[1] >> 1)"
    assert str(~x & y) == "~I[0] & I[1]"
    assert str(~(x & y)) == "~(I[0] & I[1])"


def test_comparisons_and_logic(abc):
    a, b, c = abc
    assert str(a < b) == "A[0] < A[1]"
    assert str(a + 1.0 >= b * c) == "A[0] + 1.0 >= A[1] * A[2]"
    assert str(a == b) == "A[0] == A[1]"
    assert str(a != 2.0) == "A[0] != 2.0"
    assert str(2.0 < a) == "A[0] > 2.0"
    assert str((a < b) & (b < c)) == "A[0] < A[1] and A[1] < A[2]"
    assert str((a < b) | (b < c) & (c > 0)) == "A[0] < A[1] or A[1] < A[2] and A[2] > 0.0"
    assert str(((a < b) | (b < c)) & (c > 0)) == "(A[0] < A[1] or A[1] < A[2]) and A[2] > 0.0"
    assert str(~(a < b)) == "not A[0] < A[1]"
    assert str(~((a < b) & (b < c))) == "not (A[0] < A[1] and A[1] < A[2])"
    assert str(~(a < b) & (c > 0)) == "not A[0] < A[1] and A[2] > 0.0"
    assert str((a < b) == (b < c)) == "(A[0] < A[1]) == (A[1] < A[2])"
    assert str((a < b) ^ (c > 0)) == "(A[0] < A[1]) ^ (A[2] > 0.0)"
    assert str(sl.all(a > 0, b > 0, c > 0)) == "A[0] > 0.0 and A[1] > 0.0 and A[2] > 0.0"
    assert str(sl.any(a > 0, b > 0)) == "A[0] > 0.0 or A[1] > 0.0"


def test_calls_selects_casts_and_constants(abc, ints):
    a, b, _ = abc
    x, _, _ = ints
    assert str(sl.exp(a) + sl.fma(a, b, 1.0)) == "exp(A[0]) + fma(A[0], A[1], 1.0)"
    assert str(sl.if_then_else(a > 0, a, 0.0)) == "select(A[0] > 0.0, A[0], 0.0)"
    assert str(sl.maximum(a, b) * 2.0) == "max(A[0], A[1]) * 2.0"
    assert str(sl.min(a, b)) == "min(A[0], A[1])"
    assert str(a + x) == "A[0] + float32(I[0])"
    assert str(x.astype("float16") * 2.0) == "float16(I[0]) * 2.0"
    assert str(a**2.0) == "pow(A[0], 2.0)"
    assert str(x**3) == "I[0] * I[0] * I[0]"
    assert str(sl.const(True)) == "True"
    assert str(sl.const(5, "int8")) == "5"
    assert str(sl.const(2, "float64")) == "2.0"
    assert repr(a + 1.0) == "<Binary A[0] + 1.0 : float32>"


def test_reductions_with_where_and_several_axes():
    n = sl.var("n")
    A = sl.placeholder((n, 13, 5), name="A")
    k1 = sl.reduce_axis(13, name="k1")
    k2 = sl.reduce_axis((1, 5), name="k2")
    S = sl.compute((n,), lambda i: sl.sum(A[i, k1, k2], axis=[k1, k2], where=k1 < k2 * 2), name="S")
    assert str(S) == "S[i] = sum(A[i, k1, k2], k1 in [0, 13), k2 in [1, 5), where=k1 < k2 * 2)"
    r = sl.reduce_axis((1, n), name="r")
    T = sl.compute((13,), lambda j: sl.max(A[r, j, 0], axis=r), name="T")
    assert str(T) == "T[j] = max(A[r, j, 0], r in [1, n))"
    m = sl.var("m")
    assert str(sl.reduce_axis((m, n), name="q").dom) == "[m, n)"
    assert str(sl.reduce_axis((m, m + 4), name="q").dom) == "[m, m + 4)"
    assert str(sl.reduce_axis((-2, n * 2), name="q").dom) == "[-2, n * 2)"


def test_compute_definitions():
    A = sl.placeholder((7, 5), name="A")
    B = sl.compute(
        (7, 5), lambda y, x: sl.if_then_else(x > 0, A[y, x - 1], 0.0) + A[y, x], name="B"
    )
    assert str(B) == "B[y, x] = select(x > 0, A[y, x - 1], 0.0) + A[y, x]"
    C = sl.compute((7, 5), lambda *ix: B[ix] * 2.0, name="C")
    assert str(C) == "C[i0, i1] = B[i0, i1] * 2.0"
    assert repr(C) == "Tensor(C, shape=(7, 5), float32)"
    assert repr(C.op.axis[0]) == "IterVar(i0, [0, 7), data)"
