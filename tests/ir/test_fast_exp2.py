"""`sl.fast_exp2`: the GPU's approximate ``ex2.approx.ftz.f32`` in float32 kernels, exp2 everywhere
else (the CPU, float64, the reference evaluator and the simulator)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl


def _kernel(dtype, target):
    a = sl.placeholder((100,), dtype, name="A")
    b = sl.compute((100,), lambda i: sl.fast_exp2(a[i] * 1.5), name="B")
    s = sl.create_schedule(b.op)
    if target == "cuda":
        outer, inner = s[b].split(b.op.axis[0], factor=32)
        s[b].bind(outer, sl.thread_axis("blockIdx.x"))
        s[b].bind(inner, sl.thread_axis("threadIdx.x"))
    return a, b, sl.build(s, [a, b], target=target)


def test_on_the_gpu_one_approximate_instruction_and_exp2_in_the_simulator():
    a, b, kernel = _kernel("float32", "cuda")
    assert "ex2.approx.ftz.f32" in kernel.ptx
    x = np.random.default_rng(0).uniform(-20, 20, 100).astype(np.float32)
    out = np.full(100, np.nan, np.float32)
    kernel.simulate(x, out)
    np.testing.assert_array_equal(out, sl.reference(b, {a: x}))
    np.testing.assert_allclose(out, np.exp2(x * np.float32(1.5)), rtol=1e-6)


def test_float64_and_the_cpu_compute_exp2():
    a, b, kernel = _kernel("float64", "cuda")
    assert "ex2.approx" not in kernel.ptx
    a, b, kernel = _kernel("float32", "cpu")
    x = np.random.default_rng(1).uniform(-20, 20, 100).astype(np.float32)
    out = np.full(100, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, np.exp2(x * np.float32(1.5)), rtol=1e-6)


def test_it_takes_floats():
    i = sl.placeholder((4,), "int32", name="I")
    with pytest.raises(sl.AlgorithmError, match=r"sl.fast_exp2\(I\[0\]\) needs float arguments"):
        sl.fast_exp2(i[0])
