"""``a * b + c`` becomes ``llvm.fmuladd`` in float32/float64 (C's FP_CONTRACT ON), never in
16-bit floats, whose reference rounds the product first; the target option ``-fp-contract=off``
keeps each operation's rounding, and the results are then the reference's bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from tests.cuda.ptxas import assemble


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


def multiply_add(n: int = 4099, dtype: str = "float32"):
    a, b, c = (sl.placeholder((n,), dtype, name=name) for name in "ABC")
    d = sl.compute((n,), lambda i: a[i] * b[i] + c[i], name="D")
    return [a, b, c, d]


def gpu_schedule(tensors):
    d = tensors[-1]
    s = sl.create_schedule(d)
    bx, tx = s[d].split(d.op.axis[0], factor=128)
    s[d].bind(bx, sl.thread_axis("blockIdx.x"))
    s[d].bind(tx, sl.thread_axis("threadIdx.x"))
    return s


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_without_contraction_the_cpu_computes_the_reference_bits(dtype):
    tensors = multiply_add(dtype=dtype)
    rng = np.random.default_rng(11)
    values = [rng.standard_normal(4099).astype(dtype) for _ in range(3)]
    want = sl.evaluate(tensors[-1], dict(zip(tensors, values)))
    s = sl.create_schedule(tensors[-1])
    outer, inner = s[tensors[-1]].split(tensors[-1].op.axis[0], factor=8)
    s[tensors[-1]].vectorize(inner)  # vector code contracts as readily as scalar code
    fused = sl.build(s, tensors, target="cpu")
    plain = sl.build(s, tensors, target="cpu -fp-contract=off")
    results = []
    for kernel in (fused, plain):
        out = np.full(4099, np.nan, dtype)
        kernel(*values, out)
        results.append(out)
    assert "llvm.fmuladd" in fused.llvm_ir
    assert np.count_nonzero(results[0] != want) > 40  # the fused kernel rounds once
    assert "fmuladd" not in plain.llvm_ir and " contract " not in plain.llvm_ir
    assert "llvm.fma" not in plain._compiled.optimized_ir
    np.testing.assert_array_equal(results[1], want)
    assert plain.target == "cpu -fp-contract=off"


@pytest.mark.parametrize("dtype, suffix", [("float32", "f32"), ("float64", "f64")])
def test_ptx_fuses_by_default_and_rounds_each_operation_when_asked(dtype, suffix):
    tensors = multiply_add(dtype=dtype)
    fused = sl.build(gpu_schedule(tensors), tensors, target="cuda -arch=sm_90")
    plain = sl.build(gpu_schedule(tensors), tensors, target="cuda -arch=sm_90 -fp-contract=off")
    assert f"fma.rn.{suffix}" in fused.ptx
    assert "fma." not in plain.ptx
    assert f"mul.rn.{suffix}" in plain.ptx and f"add.rn.{suffix}" in plain.ptx
    assert plain.target == "cuda -arch=sm_90 -fp-contract=off"
    assemble(fused.ptx)
    assemble(plain.ptx)


def test_simulation_matches_a_kernel_without_contraction():
    tensors = multiply_add(n=300)
    kernel = sl.build(gpu_schedule(tensors), tensors, target="cuda -arch=sm_90 -fp-contract=off")
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(300).astype("float32") for _ in range(3)]
    out = np.full(300, np.nan, "float32")
    kernel.simulate(*values, out)
    np.testing.assert_array_equal(out, sl.evaluate(tensors[-1], dict(zip(tensors, values))))


@pytest.mark.parametrize(
    "target, message",
    [
        ("cpu -fp-contract=fast", r"-fp-contract is 'on' .* or 'off' .*, not 'fast'"),
        ("cpu -O3", r"unknown option '-O3'; the cpu target takes -fp-contract=on\|off only"),
        ("auto -arch=sm_90", r"-arch and -min-blocks-per-sm are the cuda target's"),
    ],
)
def test_contraction_option_errors(target, message):
    tensors = multiply_add(n=16)
    s = sl.create_schedule(tensors[-1])
    with pytest.raises(sl.LoweringError, match=message):
        sl.build(s, tensors, target=target)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_on_the_gpu_without_contraction_the_results_are_the_reference_bits(dtype):
    tensors = multiply_add(dtype=dtype)
    rng = np.random.default_rng(12)
    values = [rng.standard_normal(4099).astype(dtype) for _ in range(3)]
    want = sl.evaluate(tensors[-1], dict(zip(tensors, values)))
    results = {}
    for target in ("cuda", "cuda -fp-contract=off"):
        kernel = sl.build(gpu_schedule(tensors), tensors, target=target)
        results[target] = kernel(*values[:3])
    assert np.count_nonzero(results["cuda"] != want) > 40  # fused: one rounding
    np.testing.assert_array_equal(results["cuda -fp-contract=off"], want)
