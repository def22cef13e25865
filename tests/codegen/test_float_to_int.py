"""Float-to-integer casts at the edges of every integer dtype: truncation toward zero, saturation
at the limits, NaN to 0, the same in the reference, the interpreter and the CPU kernels (scalar
and vector code), and in constants folded while building the expression."""

from __future__ import annotations

import math

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Const
from schedlang.loopir.interpret import run

INTS = dt.SIGNED + dt.UNSIGNED
N = sl.var("n")


def edge_values(source: str) -> np.ndarray:
    """NaN, infinities, huge values, fractions and every integer dtype's limits and their
    neighbours, as `source` stores them (duplicates left in: they cost nothing)."""
    values = [math.nan, math.inf, -math.inf, 1e20, -1e20, 2.9, -2.9, 0.5, -0.5, 0.0, -0.0, 7.0]
    for d in INTS:
        lo, hi = dt.min_value(d), dt.max_value(d)
        values += [hi, hi + 1, hi + 0.5, lo, lo - 1, lo - 0.5, lo + 0.5]
    with np.errstate(over="ignore"):
        return np.array(values, np.float64).astype(dt.to_numpy(source))


def saturated(values: np.ndarray, dtype: str) -> np.ndarray:
    """What each value must convert to, worked out one by one in Python integers."""
    lo, hi = dt.min_value(dtype), dt.max_value(dtype)
    out = []
    for v in values.astype(np.float64):
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(hi if v > 0 else lo)
        else:
            out.append(min(hi, max(lo, math.trunc(v))))
    return np.array(out, dt.to_numpy(dtype))


def casts(source: str):
    p = sl.placeholder((N,), source, name="P")
    return p, [sl.compute((N,), _cast(p, d), name=f"C_{d}") for d in INTS]


def _cast(p, dtype: str):
    return lambda i: p[i].astype(dtype)


def poisoned(outs, n: int) -> list[np.ndarray]:
    return [np.full(n, 0x5A, dt.to_numpy(t.dtype)) for t in outs]


@pytest.mark.parametrize("source", dt.FLOATS)
def test_reference_saturates(source):
    p, outs = casts(source)
    values = edge_values(source)
    for out in outs:
        want = saturated(values, out.dtype)
        np.testing.assert_array_equal(sl.evaluate(out, {p: values}), want, err_msg=out.name)


@pytest.mark.parametrize("lanes", [None, 8])
@pytest.mark.parametrize("source", dt.FLOATS)
def test_interpreter_and_cpu_saturate(source, lanes):
    p, outs = casts(source)
    s = sl.create_schedule(outs)
    if lanes:
        for out in outs:
            _, inner = s[out].split(out.op.axis[0], factor=lanes)
            s[out].vectorize(inner)
    values = edge_values(source)
    wants = [saturated(values, out.dtype) for out in outs]
    func = sl.lower(s, [p, *outs])
    kernel = sl.build(s, [p, *outs])
    for backend, execute in [
        ("interpreter", lambda a: run(func, a)),
        ("cpu", lambda a: kernel(*a)),
    ]:
        results = poisoned(outs, len(values))
        execute([values, *results])
        for out, got, want in zip(outs, results, wants):
            np.testing.assert_array_equal(got, want, err_msg=f"{backend}: {out.name}")


def test_vector_code_converts_with_the_saturating_intrinsics():
    p, outs = casts("float32")
    s = sl.create_schedule(outs)
    for out in outs:
        _, inner = s[out].split(out.op.axis[0], factor=8)
        s[out].vectorize(inner)
    ir_text = sl.build(s, [p, *outs]).llvm_ir
    assert "llvm.fptosi.sat.v8i8.v8f32" in ir_text
    assert "llvm.fptoui.sat.v8i32.v8f32" in ir_text
    assert "fptosi <" not in ir_text and "fptoui <" not in ir_text


@pytest.mark.parametrize(
    ("value", "source", "target", "folded"),
    [
        (2.9, "float32", "int32", 2),
        (-2.9, "float32", "uint8", 0),
        (1e20, "float32", "int32", 2**31 - 1),
        (-1e20, "float64", "int64", -(2**63)),
        (math.nan, "float32", "int16", 0),
        (70000.0, "float16", "int32", 2**31 - 1),  # inf as a float16
        (65519.0, "float16", "int32", 65504),  # rounded to float16 first
        (300.0, "bfloat16", "int8", 127),
    ],
)
def test_constants_fold_as_kernels_convert(value, source, target, folded):
    e = sl.const(value, source).astype(target)
    assert isinstance(e, Const) and e.dtype == target and e.value == folded
