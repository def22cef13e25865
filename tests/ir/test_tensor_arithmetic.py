"""Whole-tensor arithmetic (``A + B``, ``2 * A``, ``-A``) and chained indexing (``A[0][i]``),
as TE has them: each checked against numpy through the reference and a CPU kernel."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import schedlang as sl

from .util import assert_matches, random_array, rng

OPERATORS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}


def _check(out, inputs: dict, expected: np.ndarray) -> None:
    """`out` matches `expected` in the reference and in a CPU kernel whose output starts NaN."""
    assert_matches(sl.reference(out, inputs), expected)
    kernel = sl.build(sl.create_schedule(out), [*inputs, out])
    result = np.full(expected.shape, np.nan, expected.dtype)
    kernel(*inputs.values(), result)
    assert_matches(result, expected)


@pytest.mark.parametrize("op", OPERATORS)
def test_each_operator_on_two_tensors_of_one_symbolic_shape(op):
    n, m = sl.var("n"), sl.var("m")
    A = sl.placeholder((n, m), name="A")
    B = sl.placeholder((n, m), name="B")
    C = OPERATORS[op](A, B)
    assert C.shape == A.shape and C.dtype == "float32"
    assert C.op.tag == "broadcast"  # TE tags every tensor-tensor operator so
    gen = rng()
    a, b = random_array(gen, (7, 5)), random_array(gen, (7, 5), nonzero=True)
    _check(C, {A: a, B: b}, OPERATORS[op](a, b))


def test_broadcasting_a_column_against_a_row():
    n, m = sl.var("n"), sl.var("m")
    A = sl.placeholder((n, 1), name="A")
    B = sl.placeholder((1, m), name="B")
    C = A + B
    assert (C.shape[0], C.shape[1]) == (n, m)
    assert C.op.tag == "broadcast" and C.name == "T_add"
    gen = rng()
    a, b = random_array(gen, (9, 1)), random_array(gen, (1, 5))
    _check(C, {A: a, B: b}, a + b)


def test_broadcasting_a_vector_over_the_rows_of_a_matrix():
    n, m = sl.var("n"), sl.var("m")
    A = sl.placeholder((n, m), name="A")
    B = sl.placeholder((m,), name="B")
    gen = rng()
    a, b = random_array(gen, (5, 3)), random_array(gen, (3,), nonzero=True)
    _check(A * B, {A: a, B: b}, a * b)
    _check(B / A, {A: a, B: b}, b / a)


def test_scalars_on_either_side_and_negation():
    A = sl.placeholder((7, 3), name="A")
    x = random_array(rng(), (7, 3), nonzero=True)
    for made, expected in [
        (2 + A, 2 + x),
        (A * 0.5, x * np.float32(0.5)),
        (1.5 - A, np.float32(1.5) - x),
        (3 / A, np.float32(3) / x),
        (np.float32(2) * A, 2 * x),
        (-A, -x),
    ]:
        assert made.op.tag == "elemwise" and made.dtype == "float32"
        _check(made, {A: x}, expected)
    assert (-A).name == "T_negative"


def test_a_scalar_parameter_and_a_chain_of_operators():
    """TE's ``k + A - B * C + x`` (its test_combination), `x` passed at the call."""
    n = sl.var("n")
    A, B, C = (sl.placeholder((n, 13), name=name) for name in "ABC")
    x = sl.var("x", "float32")
    D = 3 + A - B * C + x
    gen = rng()
    a, b, c = (random_array(gen, (11, 13)) for _ in range(3))
    expected = 3 + a - b * c + np.float32(2.5)
    X = D.op.input_tensors[-1]  # the scalar parameter's 0-d tensor
    assert X.name == "x" and X.ndim == 0
    assert_matches(sl.reference(D, {A: a, B: b, C: c, X: np.float32(2.5)}), expected)
    kernel = sl.build(sl.create_schedule(D), [x, A, B, C, D])
    out = np.full(expected.shape, np.nan, "float32")
    kernel(2.5, a, b, c, out)
    assert_matches(out, expected)


def test_integer_tensors_promote_as_scalar_expressions_do():
    A = sl.placeholder((6,), "int8", name="A")
    B = sl.placeholder((6,), "int32", name="B")
    assert (A + B).dtype == "int32"
    assert (A + 1).dtype == "int8"
    assert (A * 0.5).dtype == "float32"
    gen = rng()
    a = random_array(gen, 6, "int8", nonzero=True)
    b = random_array(gen, 6, "int32", -9, 9, nonzero=True)
    assert_matches(sl.reference(B // A, {A: a, B: b}), b // a.astype("int32"))
    assert_matches(sl.reference(B % A, {A: a, B: b}), b % a.astype("int32"))
    with pytest.raises(sl.AlgorithmError, match="'/' between integers .* use '//'"):
        A / B


def test_rank_zero_tensors_broadcast_too():
    A = sl.placeholder((), name="A")
    B = sl.placeholder((4, 3), name="B")
    a, b = np.float32(1.25), random_array(rng(), (4, 3))
    C = A + B
    assert C.op.tag == "broadcast" and len(C.shape) == 2
    assert_matches(sl.reference(C, {A: a, B: b}), a + b)


def test_shapes_that_do_not_broadcast_are_refused_with_both_shapes():
    n, m = sl.var("n"), sl.var("m")
    A = sl.placeholder((5, 3), name="A")
    B = sl.placeholder((4,), name="B")
    with pytest.raises(
        sl.AlgorithmError,
        match=r"cannot broadcast 'A' of shape \(5, 3\) and 'B' of shape \(4,\) in 'A \+ B' at "
        r"test_tensor_arithmetic.py:\d+: dimension -1 \(counted from the last\) has the sizes "
        r"3 and 4; sizes broadcast when they are equal \(the same sl.var\) or one of them is 1",
    ):
        A + B
    P = sl.placeholder((n, m), name="P")
    Q = sl.placeholder((m, n), name="Q")
    with pytest.raises(sl.AlgorithmError, match=r"'P' of shape \(n, m\) and 'Q' of shape \(m, n\)"):
        P * Q


def test_comparisons_and_hashing_stay_identity():
    A = sl.placeholder((3,), name="A")
    B = sl.placeholder((3,), name="B")
    assert A != B and A == A and {A: 1}[A] == 1
    with pytest.raises(TypeError):
        A < B  # noqa: B015


def test_chained_indexing_reads_as_one_index():
    n = sl.var("n")
    A = sl.placeholder((3, n), name="A")
    T = sl.placeholder((2, 3, 4), name="T")
    B = sl.compute((n,), lambda i: A[0][i] + A[2][i], name="B")
    C = sl.compute((3, 4), lambda i, j: T[1][i][j] * T[0, i][j], name="C")
    gen = rng()
    a, t = random_array(gen, (3, 7)), random_array(gen, (2, 3, 4))
    _check(B, {A: a}, a[0] + a[2])
    _check(C, {T: t}, t[1] * t[0])


def test_a_partial_index_used_as_a_value_is_refused_where_it_was_written():
    A = sl.placeholder((8, 8), name="A")
    message = (
        r"tensor 'A' has 2 dimension\(s\) but is indexed with 1 index\(es\) at "
        r"test_tensor_arithmetic.py:\d+: give one index per dimension, e.g. A\[i, j\]"
    )
    with pytest.raises(sl.AlgorithmError, match=message):
        sl.compute((8,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(sl.AlgorithmError, match=message):
        sl.compute((8,), lambda i: A[i], name="B")
    with pytest.raises(sl.AlgorithmError, match=message):
        sl.exp(A[0])
    with pytest.raises(sl.AlgorithmError, match=message):
        A + A[0]
    with pytest.raises(sl.AlgorithmError, match=r"indexed with 3 index\(es\)"):
        A[0][1, 2]


def test_te_spelling():
    import schedlang.tvm as tvm
    from schedlang.tvm import te

    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.placeholder((4,), name="B")
    C = A * B + 1.0
    s = te.create_schedule(C.op)
    kernel = tvm.build(s, [A, B, C], "llvm")
    gen = rng()
    a, b = random_array(gen, (6, 4)), random_array(gen, (4,))
    out = np.full((6, 4), np.nan, "float32")
    kernel(a, b, out)
    assert_matches(out, a * b + 1)


def test_an_unindexed_tensor_in_a_body_is_still_named_as_such():
    A = sl.placeholder((4,), name="A")
    B = sl.placeholder((4,), name="B")
    with pytest.raises(
        sl.AlgorithmError,
        match=r"tensor 'B' used as a value next to 'A\[i\]', which uses the loop variable 'i', "
        r"at test_tensor_arithmetic.py:\d+: index it, e.g. B\[i\]",
    ):
        sl.compute((4,), lambda i: A[i] + B, name="C")
    with pytest.raises(sl.AlgorithmError, match=r"tensor 'B' used as a value: index it"):
        sl.compute((4,), lambda i: B, name="C")
    with pytest.raises(
        sl.AlgorithmError,
        match=r"'T_multiply' is whole-tensor arithmetic \(T_multiply\[i0\] = B\[i0\] \* 2.0\): "
        r"in a compute's body, index the tensors inside it instead",
    ):
        sl.compute((4,), lambda i: B * 2, name="C")
