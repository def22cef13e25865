"""TOPI's generic (CPU) schedules on schedlang's TOPI operators, against numpy; and the
schedule functions `tvm.topi.testing` picks by target."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
from schedlang.errors import LoweringError
from schedlang.tvm import te, topi

from .topi_check import check, random

A = te.placeholder((3, 5, 7), name="A")
B = te.placeholder((5, 1), name="B")
D = te.placeholder((2, 3, 9, 11), name="D")
W = te.placeholder((4, 3, 3, 3), name="W")
X = te.placeholder((5, 9), name="X")
Y = te.placeholder((7, 9), name="Y")
G = te.placeholder((5, 7), name="G")
a, b, d = random((3, 5, 7)), random((5, 1), seed=1), random((2, 3, 9, 11), seed=2)
w, x, y, g = random((4, 3, 3, 3), seed=3), random((5, 9)), random((7, 9), seed=4), random((5, 7))


def _softmax(v):
    e = np.exp(v - v.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


CASES = {
    "exp": (lambda: topi.exp(topi.add(A, B)), "injective", [A, B], [a, b], np.exp(a + b)),
    "transpose": (lambda: topi.transpose(A), "injective", [A], [a], a.T),
    "concatenate": (
        lambda: topi.concatenate([A, A], 2),
        "injective",
        [A],
        [a],
        np.concatenate([a, a], 2),
    ),
    "sum": (lambda: topi.sum(topi.exp(A), axis=1), "reduce", [A], [a], np.exp(a).sum(1)),
    "argmax": (lambda: topi.argmax(A, axis=-1), "reduce", [A], [a], a.argmax(-1)),
    "full_sum": (lambda: topi.sum(A), "reduce", [A], [a], a.sum()),
    "softmax": (lambda: topi.nn.softmax(A), "softmax", [A], [a], _softmax(a)),
    "dense": (lambda: topi.nn.dense(X, Y), "dense", [X, Y], [x, y], x @ y.T),
    "layer_norm": (
        lambda: topi.nn.layer_norm(A, G, G, (1, 2)),
        "injective",
        [A, G],
        [a, g],
        (a - a.mean((1, 2), keepdims=True)) / np.sqrt(a.var((1, 2), keepdims=True) + 1e-5) * g + g,
    ),
    "global_pool": (
        lambda: topi.nn.global_pool(D, "avg"),
        "adaptive_pool",
        [D],
        [d],
        d.mean((2, 3), keepdims=True),
    ),
    "lrn": (
        lambda: topi.nn.lrn(D, 1, 1, 0.5, 1.0, 2.0),
        "lrn",
        [D],
        [d],
        d / (2.0 + 0.5 * d * d),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generic_schedules(name):
    make, kind, inputs, arrays, expected = CASES[name]
    out = make()
    with tvm.target.Target("llvm"):
        s = getattr(topi.generic, f"schedule_{kind}")(out)
    check(out, inputs, arrays, expected, schedule=s, rtol=1e-5, atol=1e-5)


def test_generic_pool_and_conv2d_schedules():
    pooled = topi.nn.pool2d(D, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), "max")
    conv, schedule = topi.testing.get_conv2d_nchw_implement("llvm")
    out = conv(D, W, 1, 0, 1)
    with tvm.target.Target("llvm"):
        s_pool = topi.generic.schedule_pool(pooled, "NCHW")
        s_conv = schedule([out])
    windows = np.lib.stride_tricks.sliding_window_view(d, (3, 3), axis=(2, 3))
    check(pooled, [D], [d], windows[:, :, ::2, ::2].max((4, 5)), schedule=s_pool)
    expected = np.einsum("nchwij,fcij->nfhw", windows, w)
    check(out, [D, W], [d, w], expected, schedule=s_conv, atol=1e-4)


def test_testing_picks_the_generic_schedules_which_refuse_other_targets():
    assert topi.testing.get_injective_schedule("llvm") is topi.generic.schedule_injective
    assert topi.testing.get_broadcast_schedule("cuda") is topi.generic.schedule_injective
    assert topi.testing.get_reduce_schedule("llvm") is topi.generic.schedule_reduce
    with tvm.target.Target("cuda"):
        with pytest.raises(LoweringError, match="generic schedules are for the CPU"):
            topi.generic.schedule_injective(topi.exp(A))
    with pytest.raises(LoweringError, match="no target is set"):
        topi.generic.schedule_reduce(topi.sum(A))
