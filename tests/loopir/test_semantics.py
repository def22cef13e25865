"""The interpreter's numerics are the reference evaluator's, bit for bit.

Each case is an elementwise compute of the algorithm language, evaluated by `sl.evaluate` and
by the interpreter on a loop nest lowered by hand (reads become loads), on random data.
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Read, Var
from schedlang.ir.tensor import IterVar
from schedlang.ir.visit import transform
from schedlang.loopir.core.nodes import Buffer, For, If, Load, LoweredFunc, Store
from schedlang.loopir.core.simplify import simplify
from schedlang.loopir.core.visit import walk_expr
from schedlang.loopir.interpret import run

from .nests import loop_var

N = sl.var("n")
A = sl.placeholder((N,), "int32", name="A")
B = sl.placeholder((N,), "int32", name="B")
X = sl.placeholder((N,), "float32", name="X")
Y = sl.placeholder((N,), "float32", name="Y")
H = sl.placeholder((N,), "float16", name="H")
G = sl.placeholder((N,), "bfloat16", name="G")
U = sl.placeholder((N,), "uint8", name="U")
INPUTS = (A, B, X, Y, H, G, U)

CASES = {
    "int32 wraps": lambda i: A[i] * 65536 + B[i] * 40000,
    "floor div and mod": lambda i: A[i] // B[i] * 7 + A[i] % B[i],
    "division by zero": lambda i: A[i] // (B[i] % 3) + A[i] % (B[i] % 2),
    "bitwise": lambda i: ((A[i] << 3) ^ (B[i] >> 2)) | (A[i] & 255),
    "min max": lambda i: sl.maximum(A[i], B[i]) - sl.minimum(A[i], 3),
    "float to int": lambda i: (X[i] * 1000.7).astype("int32") + (X[i] * 100.0).astype("int8"),
    "float16 math": lambda i: sl.exp(H[i]) * H[i] + H[i] / (H[i] + 3.0) + sl.sigmoid(H[i]),
    "bfloat16 math": lambda i: G[i] * G[i] + sl.tanh(G[i]) - sl.sqrt(sl.abs(G[i])),
    "round ties to even": lambda i: sl.round(X[i] * 2.0),
    "fma pow erf": lambda i: sl.fma(X[i], Y[i], X[i]) + sl.pow(sl.abs(X[i]), Y[i]) + sl.erf(Y[i]),
    "logic": lambda i: ((X[i] > 0) & (Y[i] < 0) | ~(A[i] > B[i])).astype("int32"),
    "uint8 wraps": lambda i: U[i] + U[i] * 3,
    "int64": lambda i: A[i].astype("int64") * sl.const(3000000000, "int64"),
    "lazy select": lambda i: sl.if_then_else(B[i] != 0, A[i] // B[i], -1),
    "guarded neighbour": lambda i: sl.if_then_else(i + 1 < N, X[i + 1], Y[i]),
    "float32 arithmetic": lambda i: X[i] / Y[i] - X[i] * Y[i] + 0.1,
}


def lower_elementwise(tensor, threads: int = 0) -> LoweredFunc:
    """A loop nest for a 1-d elementwise compute, reads as loads: a serial loop, or with
    `threads` a loop bound to threadIdx.x with a tail guard (run SIMT-style)."""
    op = tensor.op
    buffers = {t.op: Buffer(t.name, t.shape, t.dtype) for t in INPUTS}
    out = Buffer(op.name, op.shape, op.dtype)
    loops = {iv.var: loop_var(iv.var.name) for iv in op.axis}

    def lower(node):
        if isinstance(node, IterVar):
            return loops[node.var]
        if isinstance(node, Var) and node in loops:
            return loops[node]
        if isinstance(node, Read):
            return Load(buffers[node.tensor.op], node.indices, node.dtype)
        return None

    (i,) = loops.values()
    nest = Store(out, (i,), transform(op.expr, lower))
    if threads:
        nest = For(i, sl.const(0), sl.const(threads), "bound", If(i < N, nest), "threadIdx.x")
    else:
        nest = For(i, sl.const(0), N, "serial", nest)
    return LoweredFunc("f", (*buffers.values(), out), (N,), nest)


def _inputs(n: int) -> list[np.ndarray]:
    gen = np.random.default_rng(n)
    big = gen.integers(-100000, 100000, n).astype("int32")
    small = gen.integers(-9, 9, n).astype("int32")
    floats = gen.uniform(-3, 3, (4, n)).astype("float32")
    floats[0, :4] = [0.25, -0.75, 1.25, 0.75]  # x * 2 is a tie
    return [
        big,
        small,
        floats[0],
        floats[1],
        floats[2].astype("float16"),
        floats[3].astype(dt.to_numpy("bfloat16")),
        gen.integers(0, 256, n).astype("uint8"),
    ]


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype != want.dtype:
        return False
    if dt.is_float(dt.canonical(got.dtype)) or got.dtype == dt.to_numpy("bfloat16"):
        width = {1: "u1", 2: "u2", 4: "u4", 8: "u8"}[got.dtype.itemsize]
        nan = np.isnan(got.astype("float64"))
        return bool(
            np.array_equal(nan, np.isnan(want.astype("float64")))
            and np.array_equal(got.view(width)[~nan], want.view(width)[~nan])
        )
    return bool(np.array_equal(got, want))


@pytest.mark.parametrize("threads", [0, 64], ids=["serial", "threads"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreter_matches_reference_bit_for_bit(name, threads):
    C = sl.compute((N,), CASES[name], name="C")
    func = lower_elementwise(C, threads)
    arrays = _inputs(37)
    want = sl.evaluate(C, dict(zip(INPUTS, arrays)))
    got = np.zeros(37, dt.to_numpy(C.dtype))
    run(func, [*arrays, got])
    assert _same(got, want), f"{name}: {got} != {want}"
    # Simplification keeps every value too.
    again = np.zeros_like(got)
    simple = LoweredFunc(func.name, func.params, func.sizes, simplify(func.body))
    run(simple, [*arrays, again])
    assert _same(again, want)


def test_lowered_nests_hold_loads_not_reads():
    func = lower_elementwise(sl.compute((N,), CASES["lazy select"], name="C"))
    nodes = list(walk_expr(func.body.body.value))
    assert isinstance(func.body.body, Store)
    assert any(isinstance(n, Load) for n in nodes) and not any(isinstance(n, Read) for n in nodes)
