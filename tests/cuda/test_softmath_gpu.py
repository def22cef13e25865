"""schedlang's own math on the GPU: each function, built with ``SCHEDLANG_LIBDEVICE=none``,
gives the bits the host JIT of the same LLVM IR gives (so ``benchmarks/ulp.py``'s CPU
measurement holds for the GPU) and stays within its ulp bound. Skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx.softmath import host
from schedlang.codegen.nvptx.softmath.accuracy import reference, ulp_error
from tests.codegen.test_softmath import BOUND, UNARY, points, special_values

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]


def kernel(name: str, dtype: str, n: int):
    a = sl.placeholder((n,), dtype=dtype, name="A")
    b = sl.placeholder((n,), dtype=dtype, name="B")
    if name == "pow":
        c = sl.compute((n,), lambda i: sl.pow(a[i], b[i]), name="C")
    else:
        c = sl.compute((n,), lambda i: getattr(sl, name)(a[i]), name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], factor=128)
    s[c].bind(xo, sl.thread_axis("blockIdx.x"))
    s[c].bind(xi, sl.thread_axis("threadIdx.x"))
    inputs = [a, b] if name == "pow" else [a]
    return sl.build(s, [*inputs, c], target="cuda")


def same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Equal bit patterns, any NaN matching any NaN (payloads are not specified)."""
    width = np.uint32 if got.dtype == np.float32 else np.uint64
    return (got.view(width) == want.view(width)) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [*UNARY, "pow"])
def test_gpu_matches_the_host_bit_for_bit(name, dtype, monkeypatch):
    if name == "pow" and dtype == "float64":
        pytest.skip("no float64 pow without libdevice")
    monkeypatch.setenv("SCHEDLANG_LIBDEVICE", "none")
    x = points(name, dtype, 1 << 16)
    args = [x]
    if name == "pow":
        y = np.random.default_rng(3).uniform(-30, 30, x.size).astype(dtype)
        y[: special_values(dtype).size] = special_values(dtype)
        args = [np.abs(x), y]
    built = kernel(name, dtype, x.size)
    assert "__nv_" not in built.ptx
    got = np.full(x.size, np.nan, dtype)
    built(*args, got)
    want = host.function(name, dtype)(*args)
    differ = ~same_bits(got, want)
    assert not differ.any(), f"{name}: GPU {got[differ][:4]} host {want[differ][:4]}"
    with np.errstate(all="ignore"):
        error = ulp_error(got, reference(name, dtype)(*args))
    assert error.max() <= BOUND[dtype]
