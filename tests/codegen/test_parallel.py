"""Parallel loops: any extent (0 included), nesting, captured variables."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.core.nodes import Buffer, For, Load, LoweredFunc, Store
from schedlang.runtime.kernel import Kernel
from tests.loopir.nests import loop_var


def _scaled_add(n):
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 3.0 + 1.0, name="C")
    return a, c


@pytest.mark.parametrize("size", [0, 1, 3, 7, 33])
def test_parallel_loop_of_any_extent(size):
    a, c = _scaled_add(sl.var("n"))
    s = sl.create_schedule(c)
    s[c].parallel(c.op.axis[0])
    kernel = sl.build(s, [a, c])
    x = np.arange(size, dtype=np.float32)
    out = np.full(size, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, x * 3.0 + 1.0)


def test_nested_parallel_loops_run_the_inner_one_serially():
    m, n = sl.var("m"), sl.var("n")
    A, C = Buffer("A", (m, n), "float32"), Buffer("C", (m, n), "float32")
    i, j = loop_var("i"), loop_var("j")
    store = Store(C, (i, j), Load(A, (i, j), "float32") + sl.const(1.0, "float32"))
    nest = For(i, sl.const(0), m, "parallel", For(j, sl.const(0), n, "parallel", store))
    kernel = Kernel.for_cpu(LoweredFunc("nested", (A, C), (m, n), nest))
    assert kernel.llvm_ir.count('@"schedlang_parallel_for"') == 2  # declared, called once
    x = np.random.default_rng(0).random((5, 7), dtype=np.float32)
    out = np.full_like(x, np.nan)
    kernel(x, out)
    np.testing.assert_array_equal(out, x + 1.0)


def test_parallel_body_captures_outer_loops_and_sizes():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    c = sl.compute((m, n), lambda i, j: a[i, j] * (i * n + j).astype("float32"), name="C")
    s = sl.create_schedule(c)
    jo, ji = s[c].split(c.op.axis[1], factor=4)
    s[c].parallel(jo)
    s[c].vectorize(ji)
    kernel = sl.build(s, [a, c])
    x = np.random.default_rng(1).random((3, 11), dtype=np.float32)
    out = np.full_like(x, np.nan)
    kernel(x, out)
    np.testing.assert_allclose(out, sl.evaluate(c, {a: x}))
