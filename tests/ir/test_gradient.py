"""`sl.gradient` against central differences of float64 numpy forms of the same programs:
elementwise math, transposed and clamped reads, sums, maxima and products, a chain of
computes, symbolic sizes; evaluated by the reference and built for the CPU with poisoned
outputs."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import AlgorithmError


def _numeric(forward, x: np.ndarray, head: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(head * forward(x)) / dx by central differences, in float64."""
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        up, down = x.astype("float64"), x.astype("float64")
        up[index] += eps
        down[index] -= eps
        grad[index] = ((forward(up) - forward(down)) * head).sum() / (2 * eps)
    return grad


def _check(out, A, forward, a, built=True):
    rng = np.random.default_rng(1)
    head = sl.placeholder(out.shape, name="head")
    h = rng.uniform(0.5, 1.5, tuple(int(n) for n in out.shape)).astype("float32")
    (grad,) = sl.gradient(out, [A], head)
    want = _numeric(forward, a, h)
    np.testing.assert_allclose(sl.evaluate(grad, {A: a, head: h}), want, rtol=1e-4, atol=1e-4)
    if built:
        kernel = sl.build(sl.create_schedule(grad), [grad, A, head])
        got = np.full(a.shape, np.nan, "float32")
        kernel(got, a, h)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


A = sl.placeholder((5, 7), name="A")
k = sl.reduce_axis((0, 7), name="k")
a = np.random.default_rng(0).uniform(0.2, 1.8, (5, 7)).astype("float32")

CASES = {
    "math": (
        lambda: sl.compute(
            (5, 7), lambda i, j: sl.log(A[i, j] + sl.tanh(A[i, j] * A[4 - i, j])) / A[i, j]
        ),
        lambda x: np.log(x + np.tanh(x * x[::-1])) / x,
    ),
    "pow_sigmoid_sqrt": (
        lambda: sl.compute(
            (5, 7), lambda i, j: sl.pow(A[i, j], A[i, 6 - j]) + sl.sigmoid(sl.sqrt(A[i, j]))
        ),
        lambda x: x ** x[:, ::-1] + 1 / (1 + np.exp(-np.sqrt(x))),
    ),
    "clamped_read_and_select": (
        lambda: sl.compute(
            (5, 7),
            lambda i, j: sl.if_then_else(
                j < 3, A[i, sl.min(j + 5, 6)] * A[i, j], sl.maximum(A[i, j], A[0, j])
            ),
        ),
        lambda x: np.where(
            np.arange(7) < 3, x[:, np.minimum(np.arange(7) + 5, 6)] * x, np.maximum(x, x[0])
        ),
    ),
    "sum": (
        lambda: sl.compute((5,), lambda i: sl.sum(A[i, k] * A[i, k] + A[0, k], axis=k)),
        lambda x: (x * x + x[0]).sum(1),
    ),
    "sum_where": (
        lambda: sl.compute((5,), lambda i: sl.sum(sl.exp(A[i, k]), axis=k, where=k > i)),
        lambda x: (np.exp(x) * (np.arange(7) > np.arange(5)[:, None])).sum(1),
    ),
    "triangle": (
        lambda: sl.compute((5,), _triangle),
        lambda x: np.tril(x * x[0], 2).sum(1),
    ),
    "max": (
        lambda: sl.compute((5,), lambda i: sl.max(A[i, k] * A[4 - i, k], axis=k)),
        lambda x: (x * x[::-1]).max(1),
    ),
    "prod": (
        lambda: sl.compute((5,), lambda i: sl.prod(A[i, k] + 0.5, axis=k)),
        lambda x: (x + 0.5).prod(1),
    ),
    "chain": (
        lambda: _chain(),
        lambda x: np.tanh(x @ x.T).sum(1) + np.tanh(x @ x.T).max(1),
    ),
}


def _triangle(i):
    t = sl.reduce_axis((0, i + 3), name="t")
    return sl.sum(A[i, t] * A[0, t], axis=t)


def _chain():
    j = sl.reduce_axis((0, 5), name="j")
    P = sl.compute((5, 5), lambda r, c: sl.sum(A[r, k] * A[c, k], axis=k), name="P")
    B = sl.compute((5, 5), lambda r, c: sl.tanh(P[r, c]), name="B")
    S = sl.compute((5,), lambda r: sl.sum(B[r, j], axis=j), name="S")
    M = sl.compute((5,), lambda r: sl.max(B[r, j], axis=j), name="M")
    return sl.compute((5,), lambda r: S[r] + M[r], name="out")


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_central_differences(case):
    make, forward = CASES[case]
    _check(make(), A, forward, a)


def test_floor_and_round_have_zero_gradient_and_inputs_left_unread_are_zeros():
    B = sl.compute((5, 7), lambda i, j: sl.floor(A[i, j]) + sl.round(A[i, j] * 3.0))
    X = sl.placeholder((3,), name="X")
    ga, gx = sl.gradient(B, [A, X], sl.compute((5, 7), lambda i, j: sl.const(1.0)))
    assert np.all(sl.evaluate(ga, {A: a}) == 0)
    assert np.all(sl.evaluate(gx, {A: a}) == 0) and gx.shape[0].value == 3


def test_without_head_the_result_is_the_jacobian():
    x = np.random.default_rng(2).uniform(-1, 1, (5, 7)).astype("float32")
    B = sl.compute((5,), lambda i: sl.sum(A[i, k] * A[i, k], axis=k), name="B")
    (jac,) = sl.gradient(B, A)
    assert [int(n) for n in jac.shape] == [5, 5, 7]
    want = np.zeros((5, 5, 7))
    for i in range(5):
        want[i, i] = 2 * x[i]
    np.testing.assert_allclose(sl.evaluate(jac, {A: x}), want, rtol=1e-6)


def test_symbolic_sizes():
    n = sl.var("n")
    X = sl.placeholder((n, 3), name="X")
    r = sl.reduce_axis((0, 3), name="r")
    Y = sl.compute((n,), lambda i: sl.sum(X[i, r] * X[n - 1 - i, r], axis=r), name="Y")
    head = sl.placeholder((n,), name="head")
    (g,) = sl.gradient(Y, [X], head)
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (6, 3)).astype("float32")
    h = rng.uniform(-1, 1, (6,)).astype("float32")
    want = _numeric(lambda v: (v * v[::-1]).sum(1), x, h)
    kernel = sl.build(sl.create_schedule(g), [g, X, head])
    got = np.full(x.shape, np.nan, "float32")
    kernel(got, x, h)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_scalar_output():
    x = np.arange(1, 6).astype("float32")
    V = sl.placeholder((5,), name="V")
    r = sl.reduce_axis((0, 5), name="r")
    S = sl.compute((), lambda: sl.sum(V[r] * V[r], axis=r), name="S")
    T = sl.compute((), lambda: S[()] * 3.0, name="T")
    (g,) = sl.gradient(T, V)
    np.testing.assert_allclose(sl.evaluate(g, {V: x}), 6 * x)


def test_refusals():
    I = sl.placeholder((5,), dtype="int32", name="I")  # noqa: E741
    B = sl.compute((5,), lambda i: A[i, 0] * I[i].astype("float32"))
    with pytest.raises(AlgorithmError, match="'I' is int32; only float tensors have gradients"):
        sl.gradient(B, [I])
    with pytest.raises(AlgorithmError, match=r"head 'h' has shape \(4,\); it must end with"):
        sl.gradient(B, [A], sl.placeholder((4,), name="h"))
    argmax = sl.comm_reducer(
        lambda x, y: (sl.if_then_else(x[1] >= y[1], x[0], y[0]), sl.maximum(x[1], y[1])),
        lambda t0, t1: (sl.const(-1, t0), sl.min_value(t1)),
        name="argmax",
    )
    idx, val = sl.compute((5,), lambda i: argmax((k.var, A[i, k]), axis=k), name="am")
    C = sl.compute((5,), lambda i: val[i] * 2.0)
    with pytest.raises(AlgorithmError, match="one output of a multi-output compute"):
        sl.gradient(C, [A])
