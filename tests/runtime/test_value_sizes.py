"""A size variable used as a value in a body (``A[i] * lo``), not in any shape: a parameter of
the kernel passed by name, of any integer value (nothing is assumed of it, unlike the sizes
of shapes, which are at least 1); on the CPU, and for CUDA in the SIMT interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl


def _scaled():
    n, lo = sl.var("n"), sl.var("lo")
    a = sl.placeholder((n,), "int32", name="A")
    c = sl.compute((n,), lambda i: sl.if_then_else(lo > 0, a[i] * lo, a[i] - lo), name="C")
    return a, c, lo


@pytest.mark.parametrize("value", [3, 1, 0, -4])
def test_the_cpu_kernel_takes_the_value_by_name(value):
    a, c, lo = _scaled()
    kernel = sl.build(sl.create_schedule(c.op), [a, c])
    x = np.random.default_rng(value + 10).integers(-100, 100, 23).astype("int32")
    out = np.full(23, -12345, "int32")
    kernel(x, out, lo=value)
    np.testing.assert_array_equal(out, sl.reference(c, {a: x}, sizes={lo: value}))


@pytest.mark.parametrize("value", [2, -2])
def test_the_cuda_kernel_takes_it_too(value):
    a, c, lo = _scaled()
    s = sl.create_schedule(c.op)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [a, c], target="cuda")
    x = np.random.default_rng(7).integers(-100, 100, 45).astype("int32")
    out = np.full(45, -12345, "int32")
    kernel.simulate(x, out, lo=value)
    np.testing.assert_array_equal(out, sl.reference(c, {a: x}, sizes={lo: value}))


def test_a_call_without_it_says_how_to_pass_it():
    a, c, _ = _scaled()
    kernel = sl.build(sl.create_schedule(c.op), [a, c])
    x = np.zeros(4, "int32")
    with pytest.raises(
        ValueError, match=r"size 'lo' .* pass it by name: kernel\(\.\.\., lo=value\)"
    ):
        kernel(x, np.zeros(4, "int32"))
