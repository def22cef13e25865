"""Reductions in float16 and bfloat16 accumulate in their dtype in the interpreter and in CPU
kernels, as in the reference: the unscheduled order gives the reference's bits, a reordered one
(rfactor, lanes) rounds differently but still in the dtype."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Binary
from schedlang.loopir.core.nodes import Buffer, For, If, Load, LoweredFunc, Store, seq
from schedlang.loopir.interpret import run
from schedlang.runtime.kernel import Kernel
from tests.ir.test_reduce_precision import HALVES, STUCK_AT, row_sum, uniform
from tests.loopir.nests import loop_var


def both_backends(s, inputs, outputs, values) -> list[tuple[str, list[np.ndarray]]]:
    """Each output as the interpreter and the CPU kernel compute it (outputs NaN-poisoned)."""
    args = [*inputs, *outputs]
    func = sl.lower(s, args)
    kernel = sl.build(s, args)
    found = []
    for backend, execute in [
        ("interpreter", lambda a: run(func, a)),
        ("cpu", lambda a: kernel(*a)),
    ]:
        results = [np.full(int(t.shape[0]), np.nan, dt.to_numpy(t.dtype)) for t in outputs]
        execute([*values, *results])
        found.append((backend, results))
    return found


@pytest.mark.parametrize("dtype", HALVES)
def test_a_sum_of_ones_stops_where_the_dtype_does(dtype):
    a, s = row_sum(dtype, 5, 4096)
    ones = np.ones((5, 4096), dt.to_numpy(dtype))
    want = sl.evaluate(s, {a: ones})
    assert want[0] == STUCK_AT[dtype]
    for backend, (got,) in both_backends(sl.create_schedule(s), [a], [s], [ones]):
        np.testing.assert_array_equal(got, want, err_msg=backend)


@pytest.mark.parametrize("dtype", HALVES)
def test_astype_float32_accumulates_in_float32(dtype):
    a, s = row_sum(dtype, 5, 4096, widen=True)
    ones = np.ones((5, 4096), dt.to_numpy(dtype))
    for backend, (got,) in both_backends(sl.create_schedule(s), [a], [s], [ones]):
        np.testing.assert_array_equal(got, np.full(5, 4096, np.float32), err_msg=backend)


@pytest.mark.parametrize("dtype", HALVES)
def test_the_unscheduled_order_gives_the_reference_bits(dtype):
    values = uniform(dtype, (13, 301), 0.5, 2.0)
    a, s = row_sum(dtype, 13, 301)
    want = sl.evaluate(s, {a: values})
    sch = sl.create_schedule(s)
    sch[s].split(s.op.reduce_axis[0], factor=16)  # the same order, in two loops
    for backend, (got,) in both_backends(sch, [a], [s], [values]):
        np.testing.assert_array_equal(got, want, err_msg=backend)


@pytest.mark.parametrize("dtype", HALVES)
def test_an_rfactored_sum_rounds_differently_but_close(dtype):
    values = uniform(dtype, (13, 301), 0.5, 2.0)
    a, s = row_sum(dtype, 13, 301)
    want = sl.evaluate(s, {a: values}).astype(np.float64)
    exact = values.astype(np.float64).sum(axis=1)
    sch = sl.create_schedule(s)
    _, ki = sch[s].split(s.op.reduce_axis[0], factor=16)
    sch.rfactor(s, ki)
    tolerance = 0.02 if dtype == "float16" else 0.1  # a few units of the last place
    for backend, (got,) in both_backends(sch, [a], [s], [values]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tolerance, err_msg=backend)
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=tolerance, err_msg=backend)


def lane_tree_model(values: np.ndarray, lanes: int) -> np.ndarray:
    """``R[i] = R[i] + A[i, k]`` with k in vectors of `lanes`: each vector's lanes added
    halves against halves (the tail padded with zeros), then added to R[i], every sum rounded
    to the dtype."""
    m, n = values.shape
    padded = np.zeros((m, -(-n // lanes) * lanes), values.dtype)
    padded[:, :n] = values
    total = np.zeros(m, values.dtype)
    for start in range(0, padded.shape[1], lanes):
        group = padded[:, start : start + lanes]
        while group.shape[1] > 1:
            half = group.shape[1] // 2
            group = group[:, :half] + group[:, half:]
        total = total + group[:, 0]
    return total


@pytest.mark.parametrize("dtype", HALVES)
def test_lanes_of_a_vector_reduction_are_added_in_the_dtype(dtype):
    """As loop IR can express it (the schedule layer rejects vectorizing a reduce axis); LLVM's
    vector.reduce.fadd would keep the partial sums of the lanes in float."""
    n = sl.var("n")
    A, R = Buffer("A", (sl.const(6), n), dtype), Buffer("R", (sl.const(6),), dtype)
    i, ko, ki = loop_var("i"), loop_var("k.outer"), loop_var("k.inner")
    k = ko * 8 + ki
    update = Store(R, (i,), Binary("+", Load(R, (i,), dtype), Load(A, (i, k), dtype), dtype))
    lanes = For(ki, sl.const(0), sl.const(8), "vectorized", If(k < n, update))
    body = seq(
        Store(R, (i,), sl.const(0.0, dtype)),
        For(ko, sl.const(0), (n + 7) // 8, "serial", lanes),
    )
    func = LoweredFunc("lanes", (A, R), (n,), For(i, sl.const(0), sl.const(6), "serial", body))
    kernel = Kernel.for_cpu(func)
    assert "llvm.vector.reduce.fadd" not in kernel.llvm_ir
    values = uniform(dtype, (6, 61), 20.0, 90.0)
    r = np.full(6, np.nan, dt.to_numpy(dtype))
    kernel(values, r)
    np.testing.assert_array_equal(r, lane_tree_model(values, 8))
