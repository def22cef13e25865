"""The index type of a kernel (`loopir.index.index_type`): int32 unless a size is declared wider
or a constant shape passes int32, and then int64 from the loops to the LLVM IR."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.core.nodes import For
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.interpret import run
from schedlang.runtime.kernel import Kernel


def _lowered(shape):
    a = sl.placeholder(shape, name="A")
    b = sl.compute(shape, lambda *i: a[i], name="B")
    return sl.lower(sl.create_schedule(b), [a, b])


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((1000, 1000), "int32"),
        ((46_341, 46_341), "int64"),  # each extent fits int32, the element count does not
        ((3_000_000_000,), "int64"),
        ((sl.var("n"), 8), "int32"),
        ((sl.var("n", dtype="int64"), 8), "int64"),
        ((sl.var("n", dtype="uint32"),), "int64"),  # its values reach 2**32 - 1
        ((sl.var("n", dtype="int16"),), "int32"),
    ],
)
def test_the_index_type_follows_the_sizes(shape, expected):
    func = _lowered(shape)
    assert func.index_dtype == expected
    loops = [s for s in walk_stmt(func.body) if isinstance(s, For)]
    assert loops and all(loop.var.dtype == expected for loop in loops)


def test_a_reduction_past_int32_indexes_in_int64():
    """The reduce axis runs over [2**31 - 3, 2**31 + 1): its last values wrap in int32."""
    lo = 2**31 - 3
    a = sl.placeholder((4,), "float64", name="A")
    k = sl.reduce_axis((lo, 2**31 + 1), name="k")
    b = sl.compute((1,), lambda i: sl.sum(a[k - lo] * k.astype("float64"), axis=k), name="B")
    func = sl.lower(sl.create_schedule(b), [a, b])
    assert func.index_dtype == "int64"
    x = np.random.default_rng(4).random(4)
    out = np.full(1, np.nan)
    Kernel.for_cpu(func)(x, out)
    exact = (x * (lo + np.arange(4))).sum()  # k never wraps, in the reference either
    np.testing.assert_allclose(out, [exact], rtol=1e-12)
    np.testing.assert_allclose(sl.evaluate(b, {a: x}), [exact], rtol=1e-12)


@pytest.mark.parametrize(("dtype", "truncated"), [("int32", True), ("int64", False)])
def test_int64_sizes_are_not_truncated_in_the_llvm_ir(dtype, truncated):
    n = sl.var("n", dtype=dtype)
    a = sl.placeholder((n,), "uint8", name="A")
    zero = sl.const(0, "uint8")
    b = sl.compute((2,), lambda i: sl.if_then_else(n >= 2, a[n - 2 + i], zero), name="B")
    kernel = sl.build(sl.create_schedule(b), [a, b])
    assert ("trunc i64" in kernel.llvm_ir) == truncated


def test_the_interpreter_runs_int64_loops():
    n = sl.var("n", dtype="int64")
    a = sl.placeholder((n, 3), name="A")
    b = sl.compute((n, 3), lambda i, j: a[i, j] * 2.0 + (i * 3 + j).astype("float32"))
    s = sl.create_schedule(b)
    fused = s[b].fuse(*b.op.axis)
    s[b].split(fused, factor=4)
    func = sl.lower(s, [a, b])
    assert func.index_dtype == "int64"
    x = np.random.default_rng(3).random((5, 3), dtype=np.float32)
    want = sl.evaluate(b, {a: x})
    interpreted, compiled = (np.full((5, 3), np.nan, np.float32) for _ in range(2))
    run(func, [x, interpreted])
    Kernel.for_cpu(func)(x, compiled)
    np.testing.assert_allclose(interpreted, want, rtol=1e-6)
    np.testing.assert_allclose(compiled, want, rtol=1e-6)
