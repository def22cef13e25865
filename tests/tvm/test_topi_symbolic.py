"""TOPI's operators over symbolic sizes (``te.var``): one kernel, run at sizes it was not built
for, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import random

N, M = te.var("n"), te.var("m")
A = te.placeholder((N, M), name="A")
B = te.placeholder((M,), name="B")
D = te.placeholder((1, 2, N, M), name="D")


def _softmax(a):
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _layer_norm(a, g, b):
    return (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5) * g + b


CASES = {
    "exp": (lambda: topi.exp(A), [A], lambda a: np.exp(a)),
    "add": (lambda: topi.add(A, B), [A, B], lambda a, b: a + b),
    "sum": (lambda: topi.sum(A, axis=1), [A], lambda a: a.sum(1)),
    "argmax": (lambda: topi.argmax(A, axis=0), [A], lambda a: a.argmax(0)),
    "softmax": (lambda: topi.nn.softmax(A), [A], _softmax),
    "transpose": (lambda: topi.transpose(A), [A], lambda a: a.T),
    "concatenate": (lambda: topi.concatenate([A, A], 1), [A], lambda a: np.hstack([a, a])),
    "split": (lambda: topi.split(A, [2], axis=1)[1], [A], lambda a: a[:, 2:]),
    "pad": (lambda: topi.nn.pad(A, (1, 2)), [A], lambda a: np.pad(a, ((1, 1), (2, 2)))),
    "global_pool": (
        lambda: topi.nn.global_pool(D, "max"),
        [D],
        lambda d: d.max((2, 3), keepdims=True),
    ),
    "layer_norm": (
        lambda: topi.nn.layer_norm(A, B, B, (1,)),
        [A, B],
        lambda a, b: _layer_norm(a, b, b),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_kernel_at_several_sizes(name):
    make, inputs, ref = CASES[name]
    out = make()
    kernel = tvm.build(te.create_schedule(out.op), inputs + [out], "llvm")
    for n, m in [(5, 7), (3, 4)]:
        sizes = {N: n, M: m}
        arrays = [random(tuple(sizes.get(e, e) for e in t.shape), seed=n) for t in inputs]
        expected = ref(*arrays)
        fill = np.nan if out.dtype.startswith("float") else -7
        result = tvm.nd.array(np.full(expected.shape, fill, out.dtype))
        kernel(*[tvm.nd.array(a) for a in arrays], result)
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_adaptive_windows_of_varying_length_need_constant_extents():
    with pytest.raises(AlgorithmError, match="windows of varying length need constant extents"):
        topi.nn.adaptive_pool(D, (2, 2), "avg")
