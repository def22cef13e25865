"""Matrix products over float16 and bfloat16 written as TE writes them: float32 accumulation
through ``astype`` in the sum, or accumulation in the data's own dtype. Every backend computes
what the reference declares: float32 accumulation matches it to float32 rounding, and a
schedule that keeps the reduction's order gives the reference's bits in the narrow dtype."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.loopir.interpret import run
from tests.cuda.ptxas import assemble

M, N, K = 37, 29, 51  # no tile divides them


def matmul(dtype: str, accumulate: str):
    a = sl.placeholder((M, K), dtype=dtype, name="A")
    b = sl.placeholder((K, N), dtype=dtype, name="B")
    k = sl.reduce_axis((0, K), name="k")
    if accumulate == dtype:
        c = sl.compute((M, N), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    else:
        c = sl.compute(
            (M, N),
            lambda i, j: sl.sum(a[i, k].astype(accumulate) * b[k, j].astype(accumulate), axis=k),
            name="C",
        )
    return a, b, c


def tiled(c):
    """Tiles of C and k split, in the reduction's own order (k outer before k inner)."""
    s = sl.create_schedule(c)
    io, jo, ii, ji = s[c].tile(c.op.axis[0], c.op.axis[1], 8, 8)
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=4)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    s[c].vectorize(ji)
    return s


def inputs(dtype: str, seed: int = 3):
    gen = np.random.default_rng(seed)
    values = gen.uniform(0.5, 2.0, size=(2, max(M, K), max(K, N)))
    values *= np.where(gen.random(values.shape) < 0.5, -1.0, 1.0)
    kind = dt.to_numpy(dtype)
    return values[0, :M, :K].astype(kind), values[1, :K, :N].astype(kind)


CASES = [
    ("float16", "float32"),
    ("bfloat16", "float32"),
    ("float16", "float16"),
    ("bfloat16", "bfloat16"),
]


@pytest.mark.parametrize("dtype, accumulate", CASES)
def test_the_reference_accumulates_as_declared(dtype, accumulate):
    a, b, c = matmul(dtype, accumulate)
    x, y = inputs(dtype)
    want = sl.reference(c, {a: x, b: y})
    assert want.dtype == dt.to_numpy(accumulate)
    exact = x.astype(np.float64) @ y.astype(np.float64)
    if accumulate == "float32":
        np.testing.assert_allclose(want, exact, rtol=1e-5, atol=1e-5)
    else:  # each step rounded to the narrow dtype, in the order of k
        total = np.zeros((M, N), dt.to_numpy(dtype))
        for step in range(K):
            total = (total + x[:, step : step + 1] * y[step : step + 1, :]).astype(total.dtype)
        np.testing.assert_array_equal(want, total)


@pytest.mark.parametrize("dtype, accumulate", CASES)
def test_a_tiled_product_matches_the_reference_on_the_cpu(dtype, accumulate):
    a, b, c = matmul(dtype, accumulate)
    x, y = inputs(dtype)
    want = sl.reference(c, {a: x, b: y})
    s = tiled(c)
    kernel = sl.build(s, [a, b, c])
    for backend, execute in [("interpreter", lambda g: run(kernel.lowered, g)), ("cpu", None)]:
        got = np.full((M, N), np.nan, want.dtype)
        (execute or (lambda g: kernel(*g)))([x, y, got])
        if accumulate == "float32":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=backend)
        else:
            np.testing.assert_array_equal(got, want, err_msg=backend)


def on_threads(c):
    s = sl.create_schedule(c)
    io, jo, ii, ji = s[c].tile(c.op.axis[0], c.op.axis[1], 8, 16)
    s[c].bind(io, sl.thread_axis("blockIdx.y"))
    s[c].bind(jo, sl.thread_axis("blockIdx.x"))
    s[c].bind(ii, sl.thread_axis("threadIdx.y"))
    s[c].bind(ji, sl.thread_axis("threadIdx.x"))
    return s


def check(got, want, accumulate):
    if accumulate == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, accumulate", CASES)
def test_a_product_bound_to_gpu_threads_assembles_and_simulates(dtype, accumulate):
    a, b, c = matmul(dtype, accumulate)
    x, y = inputs(dtype)
    want = sl.reference(c, {a: x, b: y})
    kernel = sl.build(on_threads(c), [a, b, c], target="cuda")
    got = np.full((M, N), np.nan, want.dtype)
    run(kernel.lowered, [x, y, got])
    check(got, want, accumulate)
    assemble(kernel.ptx)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, accumulate", CASES)
def test_a_product_bound_to_gpu_threads_matches_the_reference(dtype, accumulate):
    a, b, c = matmul(dtype, accumulate)
    x, y = inputs(dtype)
    want = sl.reference(c, {a: x, b: y})
    got = np.full((M, N), np.nan, want.dtype)
    sl.build(on_threads(c), [a, b, c], target="cuda")(x, y, got)
    check(got, want, accumulate)
