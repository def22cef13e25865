"""TE gathers through `schedlang.tvm`: an index read from another tensor, or computed through
float math as TOPI's resize does, builds and runs; an index outside the tensor reads the
nearest element (TOPI's ``take`` mode "clip"), where TE's generated code would read out of
bounds."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
import schedlang.tvm.testing  # noqa: F401 - TE programs import it so; tvm.testing below
from schedlang.tvm import te


def _gather(m, n, rows, dtype="int32"):
    data = te.placeholder((rows, n), name="data")
    idx = te.placeholder((m, n), dtype=dtype, name="idx")
    out = te.compute((m, n), lambda i, j: data[idx[i, j], j], name="out")
    return data, idx, out


def _arrays(m, n, rows, dtype, dev):
    gen = np.random.default_rng(m * n)
    data = gen.uniform(0.5, 2.0, (rows, n)).astype("float32")
    idx = gen.integers(-4, rows + 4, (m, n)).astype(dtype)
    want = data[np.clip(idx, 0, rows - 1), np.arange(n)]
    arrays = [tvm.nd.array(a, dev) for a in (data, idx, np.full((m, n), np.nan, "float32"))]
    return arrays, want


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_a_gather_over_symbolic_sizes_runs_and_clips(dtype):
    m, n, rows = te.var("m"), te.var("n"), te.var("rows")
    data, idx, out = _gather(m, n, rows, dtype)
    s = te.create_schedule(out.op)
    xo, yo, xi, yi = s[out].tile(out.op.axis[0], out.op.axis[1], 8, 4)
    s[out].parallel(xo)
    s[out].vectorize(yi)
    f = tvm.build(s, [data, idx, out], "llvm", name="gather")
    arrays, want = _arrays(19, 11, 23, dtype, tvm.cpu(0))
    f(*arrays)
    tvm.testing.assert_allclose(arrays[2].numpy(), want, rtol=0, atol=0)


def test_a_nearest_resize_indexes_through_float_math():
    size, scale = 17, 2.6
    data = te.placeholder((size,), name="data")
    out = te.compute(
        (40,),
        lambda i: data[te.floor(i.astype("float32") * (1 / scale)).astype("int32")],
        name="out",
    )
    f = tvm.build(te.create_schedule(out.op), [data, out], "llvm")
    x = np.random.default_rng(1).uniform(0.5, 2.0, size).astype("float32")
    got = tvm.nd.array(np.full(40, np.nan, "float32"))
    f(tvm.nd.array(x), got)
    rows = np.floor(np.arange(40, dtype="float32") * np.float32(1 / scale)).astype("int32")
    tvm.testing.assert_allclose(got.numpy(), x[np.clip(rows, 0, size - 1)], rtol=0, atol=0)


@pytest.mark.gpu
def test_a_gather_runs_on_the_gpu():
    data, idx, out = _gather(37, 29, 41)
    s = te.create_schedule(out.op)
    fused = s[out].fuse(*out.op.axis)
    bx, tx = s[out].split(fused, factor=64)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [data, idx, out], "cuda")
    arrays, want = _arrays(37, 29, 41, "int32", tvm.cuda(0))
    f(*arrays)
    tvm.testing.assert_allclose(arrays[2].numpy(), want, rtol=0, atol=0)
