"""The loop-IR printer: exact text for small nests (golden files will rely on it)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    Let,
    LoweredFunc,
    Seq,
    seq,
)
from schedlang.loopir.core.printer import func_str, stmt_head, stmt_str

from .nests import load, loop_var, matmul_tail, staged_rotate, store, tiled_matmul


def _text(s: str) -> str:
    return textwrap.dedent(s).strip("\n")


def test_matmul_with_tail_guard():
    expected = _text(
        """
        def main(A: float32[M, K], B: float32[K, N], C: float32[M, N]):
          for i.outer in range(0, (M + 3) // 4):  # parallel
            for j in range(0, N):
              for i.inner in range(0, 4):  # unrolled
                if i.outer * 4 + i.inner < M:
                  C[i.outer * 4 + i.inner, j] = 0.0
                  for k in range(0, K):
                    C[i.outer * 4 + i.inner, j] = C[i.outer * 4 + i.inner, j] + A[i.outer * 4 + i.inner, k] * B[k, j]
        """  # noqa: E501
    )
    assert func_str(matmul_tail()) == expected
    assert str(matmul_tail()) == expected


def test_shared_staging_with_barrier():
    expected = _text(
        """
        def rotate(A: float32[N], B: float32[N]):
          for bx in range(0, (N + 15) // 16):  # blockIdx.x
            allocate A.shared: float32[16] in shared  # 64 bytes
            for tx in range(0, 16):  # threadIdx.x
              if bx * 16 + tx < N:
                A.shared[tx] = A[bx * 16 + tx]
              barrier()
              if bx * 16 + tx < N and bx * 16 + (tx + 1) % 16 < N:
                B[bx * 16 + tx] = A.shared[(tx + 1) % 16]
        """
    )
    assert func_str(staged_rotate()) == expected


def test_let_else_strides_kinds_and_offsets():
    n = sl.var("n")
    out = Buffer("out", (n,), "float32")
    tmp = Buffer("tmp", (const(4), const(6)), "float32", "shared", (const(8), const(1)))
    acc = Buffer("acc", (n,), "int32", "local")
    i, v, x = loop_var("i"), loop_var("v"), loop_var("x")
    base = loop_var("base")
    body = Let(
        base,
        i * 4,
        If(
            base + v < n,
            store(out, (base + v,), load(tmp, 0, v)),
            If(i == 0, Barrier(), store(out, (0,), const(1.0, "float32"))),
        ),
    )
    nest = Allocate(
        tmp,
        Allocate(
            acc,
            For(
                x,
                const(0),
                const(2),
                "vthread",
                For(i, const(2), n - 2, "serial", For(v, const(0), const(4), "vectorized", body)),
            ),
        ),
    )
    expected = _text(
        """
        def f(out: float32[n]):
          allocate tmp: float32[4, 6] in shared, strides=[8, 1]  # 128 bytes
          allocate acc: int32[n] in local
          for x in range(0, 2):  # vthread
            for i in range(2, n):
              for v in range(0, 4):  # vectorized
                let base = i * 4
                if base + v < n:
                  out[base + v] = tmp[0, v]
                elif i == 0:
                  barrier()
                else:
                  out[0] = 1.0
        """
    )
    assert func_str(LoweredFunc("f", (out,), (n,), nest)) == expected
    assert stmt_head(nest) == "allocate tmp: float32[4, 6] in shared, strides=[8, 1]  # 128 bytes"


def test_statements_and_empty_bodies():
    assert stmt_str(Seq(())) == "pass"
    i = loop_var("i")
    assert stmt_str(For(i, const(0), const(3), "serial", Seq(()))) == (
        "for i in range(0, 3):\n  pass"
    )
    assert stmt_str(seq(Barrier(), Barrier())) == "barrier()\nbarrier()"


def test_local_and_bound_loops_print_their_tags():
    text = func_str(tiled_matmul())
    assert "  for by in range(0, (M + 7) // 8):  # blockIdx.y\n" in text
    assert "allocate C.local: float32[1] in local  # 4 bytes" in text
    assert "        for tx in range(0, 8):  # threadIdx.x\n" in text
    assert text == func_str(tiled_matmul())  # deterministic


def test_tensors_of_one_name_are_told_apart():
    first, second = sl.placeholder((7,), name="A"), sl.placeholder((7,), name="A")
    B = sl.compute((7,), lambda i: first[i] + second[i] * 2.0, name="B")
    C = sl.compute((7,), lambda i: B[i] - first[i], name="B")
    s = sl.create_schedule(C)
    expected = _text(
        """
        def main(A: float32[7], A_1: float32[7], B: float32[7]):
          allocate B_1: float32[7] in global  # 28 bytes
          for i in range(0, 7):
            B_1[i] = A[i] + A_1[i] * 2.0
          for i_1 in range(0, 7):
            B[i_1] = B_1[i_1] - A[i_1]
        """
    )
    assert str(sl.lower(s, [first, second, C])) == expected
    kernel = sl.build(s, [first, second, C])
    a, b = np.random.default_rng(3).random((2, 7), np.float32)
    np.testing.assert_allclose(kernel(a, b), sl.evaluate(C, {first: a, second: b}), atol=1e-6)
    with pytest.raises(TypeError, match=r"argument 'A_1' must have dtype float32, got float64"):
        kernel(a, b.astype(np.float64))
