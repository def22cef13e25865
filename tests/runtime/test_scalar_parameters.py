"""Scalar parameters: ``sl.var(name, "float32")`` is a value the kernel is called with, a 0-d
input listed in `args` where the call passes it (TE's ``te.var(..., dtype="float32")``). The
call takes a number there (rounded to the dtype), on the CPU, in the SIMT interpreter and, on a
GPU, with torch tensors around it; the reference takes it as an input."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.tvm import te


def _axpy(dtype="float32"):
    n = sl.var("n")
    alpha = sl.var("alpha", dtype)
    x = sl.placeholder((n,), dtype, name="X")
    y = sl.placeholder((n,), dtype, name="Y")
    out = sl.compute((n,), lambda i: alpha * x[i] + y[i], name="Out")
    return alpha, x, y, out


def _blocks_of(out, threads):
    """`out`'s loop split into blocks of `threads` threads."""
    s = sl.create_schedule(out.op)
    bx, tx = s[out].split(out.op.axis[0], factor=threads)
    s[out].bind(bx, sl.thread_axis("blockIdx.x"))
    s[out].bind(tx, sl.thread_axis("threadIdx.x"))
    return s


def _inputs(n, dtype="float32"):
    rng = np.random.default_rng(n)
    return rng.uniform(-1, 1, (2, n)).astype(dtype)


@pytest.mark.parametrize("value", [2.5, -0.1, 3, np.float64(1e-3)])
def test_the_cpu_kernel_takes_a_number_in_its_place(value):
    alpha, x, y, out = _axpy()
    kernel = sl.build(sl.create_schedule(out.op), [alpha, x, y, out])
    a, b = _inputs(29)
    result = np.full(29, np.nan, np.float32)
    kernel(value, a, b, result)
    want = sl.reference(out, {alpha: value, x: a, y: b})
    np.testing.assert_allclose(result, want, rtol=1e-6)
    np.testing.assert_allclose(kernel(value, a, b), want, rtol=1e-6)  # inputs alone


def test_the_number_is_rounded_to_the_dtype():
    alpha, x, y, out = _axpy("float16")
    kernel = sl.build(sl.create_schedule(out.op), [x, y, alpha, out])
    a, b = _inputs(8, "float16")
    got = kernel(a, b, 0.1)
    want = sl.reference(out, {alpha: np.float16(0.1), x: a, y: b})
    np.testing.assert_array_equal(got, want)


def test_the_simt_interpreter_takes_it_too():
    alpha, x, y, out = _axpy()
    s = _blocks_of(out, 32)
    kernel = sl.build(s, [x, alpha, y, out], target="cuda")
    a, b = _inputs(45)
    result = np.full(45, np.nan, np.float32)
    kernel.simulate(a, -1.5, b, result)
    np.testing.assert_allclose(result, sl.reference(out, {alpha: -1.5, x: a, y: b}), rtol=1e-6)


def test_what_is_not_a_number_is_refused_and_a_missing_parameter_named():
    alpha, x, y, out = _axpy()
    s = sl.create_schedule(out.op)
    kernel = sl.build(s, [alpha, x, y, out])
    a, b = _inputs(4)
    with pytest.raises(TypeError, match="argument 'alpha' must be a numpy array"):
        kernel("2.5", a, b, np.empty(4, np.float32))
    with pytest.raises(sl.LoweringError, match="reads the scalar parameter 'alpha', which is not"):
        sl.build(s, [x, y, out])


def test_a_te_scalar_parameter_through_the_compatibility_layer():
    n = te.var("n")
    scale = te.var("scale", dtype="float32")
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * scale, name="b")
    f = tvm.build(te.create_schedule(b.op), [a, scale, b], "llvm")
    x = tvm.nd.array(np.arange(6, dtype="float32"))
    y = tvm.nd.array(np.zeros(6, "float32"))
    f(x, 0.5, y)
    np.testing.assert_allclose(y.numpy(), np.arange(6) * 0.5)


@pytest.mark.gpu
def test_on_the_gpu_with_torch_tensors():
    torch = pytest.importorskip("torch")
    alpha, x, y, out = _axpy()
    s = _blocks_of(out, 64)
    kernel = sl.build(s, [alpha, x, y, out], target="cuda")
    a, b = (torch.from_numpy(v).cuda() for v in _inputs(1000))
    got = kernel(0.75, a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(got, 0.75 * a + b)
