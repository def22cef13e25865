"""``a * b + c`` becomes ``llvm.fmuladd`` in float32/float64 (C's FP_CONTRACT ON), never in
16-bit floats, whose reference rounds the product first."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl


@pytest.mark.parametrize("dtype, fused", [("float32", True), ("float64", True), ("float16", False)])
def test_multiply_add_contracts(dtype, fused):
    a = sl.placeholder((13,), dtype, name="A")
    b = sl.placeholder((13,), dtype, name="B")
    c = sl.compute((13,), lambda i: a[i] * b[i] + a[12 - i], name="C")
    s = sl.create_schedule(c)
    kernel = sl.build(s, [a, b, c], target="cpu")
    assert ("llvm.fmuladd" in kernel.llvm_ir) == fused
    rng = np.random.default_rng(3)
    x, y = (rng.uniform(0.5, 2, 13).astype(dtype) for _ in range(2))
    out = np.full(13, np.nan, dtype)
    kernel(x, y, out)
    want = sl.evaluate(c, {a: x, b: y})
    np.testing.assert_allclose(out, want, rtol=1e-3 if dtype == "float16" else 1e-6)
