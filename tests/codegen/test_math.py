"""Every math function, in every float dtype, scalar and vectorized, against the reference with
the tolerance of the dtype (the C math library and numpy may differ in the last bit)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.ir.math import FLOAT_FUNCTIONS, NUMERIC_FUNCTIONS
from schedlang.loopir.core.nodes import Buffer, For, Load, LoweredFunc, Store
from schedlang.runtime.kernel import Kernel
from tests.loopir.nests import loop_var

N = 29
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}
FUNCTIONS = sorted(FLOAT_FUNCTIONS) + sorted(NUMERIC_FUNCTIONS)


def _nest(name: str, dtype: str, vectorized: bool) -> tuple[LoweredFunc, list[Buffer]]:
    arity = FLOAT_FUNCTIONS.get(name, 1)
    ins = [Buffer(f"X{k}", (sl.const(N),), dtype) for k in range(arity)]
    out = Buffer("Y", (sl.const(N),), dtype)
    if vectorized:
        io, ii = loop_var("io"), loop_var("ii")
        i = io * 8 + ii
    else:
        i = loop_var("i")
    args = [Load(b, (i,), dtype) for b in ins]
    body = Store(out, (i,), getattr(sl, name)(*args))
    if vectorized:
        nest = For(
            io,
            sl.const(0),
            sl.const(N // 8),
            "serial",
            For(ii, sl.const(0), sl.const(8), "vectorized", body),
        )
    else:
        nest = For(i, sl.const(0), sl.const(N), "serial", body)
    return LoweredFunc(name, (*ins, out), (), nest), ins


@pytest.mark.parametrize("vectorized", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_math_function(name, dtype, vectorized):
    func, ins = _nest(name, dtype, vectorized)
    gen = np.random.default_rng(3)
    positive = name in ("log", "log2", "sqrt", "rsqrt", "pow")
    lo = 0.1 if positive else -4.0
    arrays = [gen.uniform(lo, 4.0, N).astype(dt.to_numpy(dtype)) for _ in ins]
    arrays[0][:4] = [0.5, 1.5, 2.5, 3.5] if not positive else [0.25, 1.0, 2.0, 4.0]
    out = np.full(N, np.nan, dt.to_numpy(dtype))
    Kernel.for_cpu(func)(*arrays, out)
    placeholders = [sl.placeholder((N,), dtype, name=f"X{k}") for k in range(len(ins))]
    want_t = sl.compute((N,), lambda i: getattr(sl, name)(*(p[i] for p in placeholders)), name="Y")
    want = sl.evaluate(want_t, dict(zip(placeholders, arrays)))
    done = N // 8 * 8 if vectorized else N
    np.testing.assert_allclose(
        out[:done].astype("float64"), want[:done].astype("float64"), rtol=RTOL[dtype], atol=1e-30
    )
    assert np.isnan(out[done:].astype("float64")).all()  # the loop covers exactly its extent


@pytest.mark.parametrize("lanes", [1, 4])
def test_a_square_is_one_multiplication_on_the_gpu(lanes):
    """``x ** 2`` is x * x (one rounding, as the power is); other powers still call the
    target's pow. Without the shortcut a GPU runs its whole library pow for a variance."""
    n = 1000
    x = sl.placeholder((n,), name="X")

    def pow_calls(fcompute) -> tuple[int, sl.Kernel]:
        y = sl.compute((n,), fcompute, name="Y")
        s = sl.create_schedule(y.op)
        rest, lane = s[y].split(y.op.axis[0], factor=lanes)
        block, thread = s[y].split(rest, factor=64)
        s[y].bind(block, sl.thread_axis("blockIdx.x"))
        s[y].bind(thread, sl.thread_axis("threadIdx.x"))
        s[y].vectorize(lane)
        kernel = sl.build(s, [x, y], target="cuda")
        lines = kernel.llvm_ir.splitlines()
        return sum("call" in line and "powf" in line for line in lines), kernel

    calls, kernel = pow_calls(lambda i: (x[i] - 1.0) ** 2 + x[i] ** 2.5)
    assert calls > 0 and calls == pow_calls(lambda i: x[i] - 1.0 + x[i] ** 2.5)[0]
    a = np.random.default_rng(4).uniform(0.1, 3.0, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel.simulate(a, out)
    np.testing.assert_allclose(out, (a - 1.0) ** 2 + a.astype(np.float64) ** 2.5, rtol=1e-6)
