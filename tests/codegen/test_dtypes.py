"""Every dtype in memory and in arithmetic: loads, stores, casts between every pair, and
per-dtype arithmetic, compiled and compared with the reference bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Read
from schedlang.ir.visit import transform
from schedlang.loopir.core.nodes import Buffer, For, Load, LoweredFunc, Store, seq
from schedlang.runtime.kernel import Kernel
from tests.loopir.nests import loop_var
from tests.loopir.test_semantics import _same

N = sl.var("n")


def _values(dtype: str, n: int) -> np.ndarray:
    gen = np.random.default_rng(7)
    if dtype == "bool":
        return gen.random(n) < 0.5
    if dt.is_float(dtype):
        data = gen.uniform(-300, 300, n)
        data[:3] = [0.5, -2.5, 1e-3]
        return data.astype(dt.to_numpy(dtype))
    lo, hi = dt.min_value(dtype), dt.max_value(dtype)
    return gen.integers(lo, hi, n, endpoint=True, dtype=np.int64).astype(dtype)


def _lower(outputs, source) -> LoweredFunc:
    """One loop storing every compute of `outputs` (elementwise over the placeholder `source`)."""
    i = loop_var("i")
    src = Buffer(source.name, source.shape, source.dtype)
    outs = [Buffer(t.name, t.shape, t.dtype) for t in outputs]

    def lower(node):
        if isinstance(node, Read):
            return Load(src, (i,), node.dtype)
        if any(node is t.op.axis[0].var for t in outputs):
            return i
        return None

    stores = [Store(b, (i,), transform(t.op.expr, lower)) for b, t in zip(outs, outputs)]
    return LoweredFunc("casts", (src, *outs), (N,), For(i, sl.const(0), N, "serial", seq(*stores)))


def _cast(p, dtype: str):
    return lambda i: p[i].astype(dtype)


@pytest.mark.parametrize("source", dt.ALL)
def test_casts_to_every_dtype(source):
    p = sl.placeholder((N,), source, name="P")
    outs = [sl.compute((N,), _cast(p, d), name=f"C_{d}") for d in dt.ALL]
    func = _lower(outs, p)
    values = _values(source, 41)
    results = [np.zeros(41, dt.to_numpy(d)) for d in dt.ALL]
    Kernel.for_cpu(func)(values, *results)
    for d, got, out in zip(dt.ALL, results, outs):
        want = sl.evaluate(out, {p: values})
        assert _same(got, want), f"{source} -> {d}: {got} != {want}"


ARITH = {
    "bool": lambda p, i: (p[i] & ~p[i + 0]) | (p[i] ^ sl.const(True)),
    "int": lambda p, i: p[i] * 3 - p[i] // 7 + p[i] % 5 + sl.maximum(p[i], 1),
    "float": lambda p, i: (
        p[i] * 3.0 - p[i] / 7.0 + p[i] // 5.0 + p[i] % 2.0 - sl.minimum(p[i], 1.0)
    ),
}


@pytest.mark.parametrize("dtype", dt.ALL)
def test_arithmetic_in_every_dtype(dtype):
    kind = "bool" if dtype == "bool" else "float" if dt.is_float(dtype) else "int"
    p = sl.placeholder((N,), dtype, name="P")
    out = sl.compute((N,), lambda i: ARITH[kind](p, i), name="C")
    func = _lower([out], p)
    values = _values(dtype, 41)
    got = np.zeros(41, dt.to_numpy(out.dtype))
    Kernel.for_cpu(func)(values, got)
    want = sl.evaluate(out, {p: values})
    assert _same(got, want), f"{dtype}: {got} != {want}"
