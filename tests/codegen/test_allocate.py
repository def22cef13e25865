"""Buffers the kernel allocates: on the stack (local, constant size), on the heap once per call
(constant size), on the heap where allocated (symbolic size), private to each parallel task."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.core.nodes import Allocate, Buffer, For, Load, LoweredFunc, Store, seq
from schedlang.runtime.kernel import Kernel
from tests.loopir.nests import loop_var


def _staged(scope: str, symbolic: bool, kind: str) -> LoweredFunc:
    """``for i: allocate T[row]; for j: T[j] = A[i, j] * 2; for j: C[i, j] = T[j] + 1`` where
    the row has n elements (symbolic) or 16 (constant)."""
    m, n = sl.var("m"), sl.var("n")
    row = n if symbolic else sl.const(16)
    A, C = Buffer("A", (m, n), "float32"), Buffer("C", (m, n), "float32")
    T = Buffer("T", (row,), "float32", scope)
    i, j, j2 = loop_var("i"), loop_var("j"), loop_var("j2")
    fill = For(j, sl.const(0), n, "serial", Store(T, (j,), Load(A, (i, j), "float32") * 2.0))
    use = For(j2, sl.const(0), n, "serial", Store(C, (i, j2), Load(T, (j2,), "float32") + 1.0))
    body = For(i, sl.const(0), m, kind, Allocate(T, seq(fill, use)))
    return LoweredFunc("staged", (A, C), (m, n), body)


@pytest.mark.parametrize("kind", ["serial", "parallel"])
@pytest.mark.parametrize("scope", ["local", "global", "shared"])
@pytest.mark.parametrize("symbolic", [False, True], ids=["constant", "symbolic"])
def test_allocated_buffer(scope, kind, symbolic):
    kernel = Kernel.for_cpu(_staged(scope, symbolic, kind))
    expect_call = "malloc" if symbolic or scope != "local" else "alloca"
    assert expect_call in kernel.llvm_ir
    x = np.random.default_rng(0).random((9, 16), dtype=np.float32)
    out = np.full_like(x, np.nan)
    kernel(x, out)
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)


def test_compute_at_producer_through_build():
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")
    b = sl.compute((n, n), lambda i, j: a[i, j] * 2.0, name="B")
    c = sl.compute((n, n), lambda i, j: b[i, j] + b[j, i], name="C")
    s = sl.create_schedule(c)
    s[b].compute_at(s[c], c.op.axis[0])
    x = np.random.default_rng(1).random((6, 6), dtype=np.float32)
    out = np.full_like(x, np.nan)
    sl.build(s, [a, c])(x, out)
    np.testing.assert_allclose(out, sl.evaluate(c, {a: x}))
