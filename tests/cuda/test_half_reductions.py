"""float16 and bfloat16 reductions on the CUDA target accumulate in their dtype: each thread's
sum is a chain of half-precision adds (PTX ``add.rn.f16``), and on a GPU a sum of ones stops
where the reference's does; a cross-thread reduction rounds in another order, close to it."""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from tests.ir.test_reduce_precision import HALVES, STUCK_AT, row_sum, uniform
from tests.schedule.test_gpu_schedules import bind

from .kernels import row_reduce
from .ptxas import assemble


def build(dtype: str, m: int, n: int, widen: bool = False):
    """One row per thread, the reduce loop serial in it (the reference's order)."""
    a, s = row_sum(dtype, m, n, widen)
    sch = sl.create_schedule(s)
    xo, xi = sch[s].split(s.op.axis[0], factor=32)
    bind(sch, s, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    return sl.build(sch, [a, s], target="cuda"), a, s


def test_a_float16_sum_is_a_chain_of_half_adds():
    kernel, _, _ = build("float16", 64, 4096)
    assemble(kernel.ptx)
    loop = kernel.ptx[kernel.ptx.index("$L__BB0_1:") :]
    assert len(re.findall(r"add\.rn\.f16\s", loop)) >= 2
    assert not re.search(r"add(\.rn)?\.f32\s", loop)


def test_a_widened_float16_sum_adds_in_float32():
    kernel, _, _ = build("float16", 64, 4096, widen=True)
    assemble(kernel.ptx)
    assert re.search(r"add\.rn\.f32\s", kernel.ptx) and "add.rn.f16" not in kernel.ptx


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("dtype", HALVES)
def test_gpu_sum_of_ones_stops_where_the_reference_does(dtype):
    for widen, total in ((False, STUCK_AT[dtype]), (True, 4096)):
        kernel, a, s = build(dtype, 37, 4096, widen)
        result = np.full(37, np.nan, dt.to_numpy(s.dtype))
        kernel(np.ones((37, 4096), dt.to_numpy(dtype)), result)
        np.testing.assert_array_equal(result, np.full(37, total, dt.to_numpy(s.dtype)))


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("dtype", HALVES)
def test_gpu_serial_order_gives_the_reference_bits(dtype):
    kernel, a, s = build(dtype, 45, 301)
    values = uniform(dtype, (45, 301), 0.5, 2.0)
    result = np.full(45, np.nan, dt.to_numpy(dtype))
    kernel(values, result)
    np.testing.assert_array_equal(result, sl.evaluate(s, {a: values}))


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("dtype", HALVES)
def test_gpu_cross_thread_sum_is_close(dtype):
    s, (a,), (b,) = row_reduce(9, 301, 32, 4, "sum", dtype)
    kernel = sl.build(s, [a, b], target="cuda")
    values = uniform(dtype, (9, 301), 0.5, 2.0)
    result = np.full(9, np.nan, dt.to_numpy(dtype))
    kernel(values, result)
    want = sl.evaluate(b, {a: values}).astype(np.float64)
    tolerance = 0.02 if dtype == "float16" else 0.1
    np.testing.assert_allclose(result.astype(np.float64), want, rtol=tolerance)
