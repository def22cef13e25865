"""TE's names around differentiation: ``te.gradient`` with a TOPI head over TOPI operators,
``tvm.testing.check_numerical_grads``, ``topi.einsum``/``topi.tensordot``, ``topi.nn.conv2d``
by layout, ``te.trunc``, and ``tvm.build`` given an input that the kernel does not read."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
import schedlang.tvm.testing  # noqa: F401 - tvm.testing
from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, random


def test_gradient_of_a_convolution_and_pooling_matches_central_differences():
    X = te.placeholder((1, 2, 7, 6), name="X")
    W = te.placeholder((3, 2, 3, 2), name="W")
    R = topi.nn.pool2d(
        topi.nn.relu(topi.nn.conv2d(X, W, 2, 1, 1)), [2, 2], [1, 1], [1, 1], [0, 0, 0, 0], "max"
    )
    gx, gw = te.gradient(R, [X, W], head=topi.full_like(R, 1.0))
    x, w = random((1, 2, 7, 6), seed=1), random((3, 2, 3, 2), seed=2)
    fx = tvm.build(te.create_schedule(gx.op), [gx, X, W])
    fw = tvm.build(te.create_schedule(gw.op), [gw, X, W])
    got_x, got_w = np.full(x.shape, np.nan, "float32"), np.full(w.shape, np.nan, "float32")
    fx(got_x, x, w)
    fw(got_w, x, w)

    forward = tvm.build(te.create_schedule(R.op), [R, X, W])

    def total(xv, wv):
        out = np.full(tuple(int(n) for n in R.shape), np.nan, "float32")
        forward(out, xv.astype("float32"), wv.astype("float32"))
        return float(out.sum())

    tvm.testing.check_numerical_grads(total, [x, w], [got_x, got_w])


def test_check_numerical_grads_refuses_a_wrong_gradient():
    with pytest.raises(AssertionError, match="gradient of argument 0 is"):
        tvm.testing.check_numerical_grads(
            lambda v: float((v**2).sum()), [np.array([1.0, 2.0])], [np.array([2.0, 3.0])]
        )
    tvm.testing.check_numerical_grads(
        lambda v: float((v**2).sum()), {"v": np.array([1.0, 2.0])}, {"v": np.array([2.0, 4.0])}
    )


def test_einsum_and_tensordot_are_numpys():
    A = te.placeholder((3, 4, 5), name="A")
    B = te.placeholder((5, 4, 2), name="B")
    S = te.placeholder((3, 3), name="S")
    a, b, sq = random((3, 4, 5)), random((5, 4, 2), seed=1), random((3, 3), seed=2)
    check(topi.einsum("ijk,kjl->il", A, B), [A, B], [a, b], np.einsum("ijk,kjl->il", a, b))
    check(topi.einsum("ii->i", S), [S], [sq], np.einsum("ii->i", sq))
    check(
        topi.tensordot(A, B, ([1, 2], [1, 0])),
        [A, B],
        [a, b],
        np.tensordot(a, b, ([1, 2], [1, 0])),
        rtol=1e-5,
    )
    C = te.placeholder((5, 6), name="C")
    c = random((5, 6), seed=3)
    check(topi.tensordot(A, C, 1), [A, C], [a, c], np.tensordot(a, c, 1), rtol=1e-5)
    with pytest.raises(AlgorithmError, match="give one subscript per operand"):
        topi.einsum("ij,jk", A, B)


def test_conv2d_by_layout_and_trunc():
    X = te.placeholder((1, 2, 5, 5), name="X")
    W = te.placeholder((3, 2, 3, 3), name="W")
    assert topi.nn.conv2d(X, W, 1, 1, 1).op.tag == "conv2d_nchw"
    with pytest.raises(AlgorithmError, match="layout NHWC/OIHW is not supported"):
        topi.nn.conv2d(X, W, 1, 1, 1, data_layout="NHWC")
    V = te.placeholder((7,), name="V")
    v = np.array([-2.5, -1.0, -0.3, 0.0, 0.3, 1.7, 2.0], "float32")
    check(te.compute((7,), lambda i: te.trunc(V[i])), [V], [v], np.trunc(v))


def test_build_accepts_an_input_the_kernel_does_not_read():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 3.0, name="B")
    (g,) = te.gradient(B, [A], head=topi.full_like(B, 1.0))
    f = tvm.build(te.create_schedule(g.op), [g, A])
    got = np.full(4, np.nan, "float32")
    f(got, random((4,)))
    np.testing.assert_allclose(got, np.full(4, 3.0))
