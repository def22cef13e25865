"""A declared tensor intrinsic called inside a compute (TE's TensorComputeOp): the compute's
body is the intrinsic's definition read through the regions, its inner loops run the
intrinsic's calls (tests/schedule/data/gemv.ll), its outer loops are scheduled as any; against
numpy with NaN-poisoned outputs, at a symbolic size; and each mistake refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import AlgorithmError
from schedlang.schedule.errors import TensorizeError

from .test_user_intrin import _gemv

IR = (Path(__file__).parent / "data" / "gemv.ll").read_text()
M, L = 48, 32


def _vadd(n=16):
    x = sl.placeholder((n,), name="x")
    y = sl.placeholder((n,), name="y")
    z = sl.compute((n,), lambda i: x[i] + y[i], name="z")

    def body(ins, outs):
        ptrs = (outs[0].access_ptr("w"), ins[0].access_ptr("r"), ins[1].access_ptr("r"))
        return sl.call_extern("int32", "vadd", *ptrs, n)

    return sl.decl_tensor_intrin(z.op, body, name="vadd")


def _inputs():
    n = sl.var("n")
    return n, sl.placeholder((n, L), name="A"), sl.placeholder((M, L), name="B")


def _run(s, args, n):
    rng = np.random.default_rng(8)
    a = rng.uniform(-1, 1, (n, L)).astype("float32")
    b = rng.uniform(-1, 1, (M, L)).astype("float32")
    out = np.full((n, M // 16, 16), np.nan, "float32")
    sl.build(s, args)(a, b, out)
    return a, b, out


def test_an_elementwise_intrinsic_runs_once_per_row():
    n = sl.var("n")
    A, B = sl.placeholder((n, 16), name="A"), sl.placeholder((n, 16), name="B")
    C = sl.compute((n, 16), lambda i: _vadd()(A[i, 0:16], B[i, 0:16]), name="C")
    assert [iv.var.name for iv in C.op.axis] == ["i", "i_"]
    s = sl.create_schedule(C)
    s[C].pragma(C.op.axis[0], "import_llvm", IR)
    text = str(sl.lower(s, [A, B, C]))
    assert "vadd(&C[i, 0], &A[i, 0], &B[i, 0], 16)" in text and "range(0, 16)" not in text
    rng = np.random.default_rng(3)
    a, b = (rng.uniform(-1, 1, (7, 16)).astype("float32") for _ in range(2))
    out = np.full((7, 16), np.nan, "float32")
    sl.build(s, [A, B, C])(a, b, out)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    np.testing.assert_allclose(sl.reference(C, {A: a, B: b}), a + b, rtol=1e-6)


def test_a_reduction_in_one_call_per_tile_with_its_outer_loops_scheduled():
    n, A, B = _inputs()
    gemv = _gemv(16, L)
    C = sl.compute(
        (n, M // 16, 16), lambda i, jo: gemv(A[i, 0:L], B[jo * 16 : jo * 16 + 16, 0:L]), name="C"
    )
    s = sl.create_schedule(C)
    i, jo, _ = C.op.axis
    io, ii = s[C].split(i, factor=2)
    s[C].reorder(jo, io, ii)
    s[C].parallel(jo)
    s[C].pragma(jo, "import_llvm", IR)
    text = str(sl.lower(s, [A, B, C]))
    assert "gemv_set(&C[" in text and "range(0, 32)" not in text, text
    a, b, out = _run(s, [A, B, C], 7)
    np.testing.assert_allclose(out.reshape(7, M), a @ b.T, rtol=1e-5, atol=1e-5)
    ref = sl.reference(C, {A: a, B: b})
    np.testing.assert_allclose(ref.reshape(7, M), a @ b.T, rtol=1e-5, atol=1e-5)


def test_reduce_axis_accumulates_the_tiles_by_reset_and_update():
    n, A, B = _inputs()
    gemv = _gemv(16, 8, parts="reset")
    ko = sl.reduce_axis((0, L // 8), name="ko")
    D = sl.compute(
        (n, M // 16, 16),
        lambda i, jo: gemv(
            A[i, ko * 8 : ko * 8 + 8],
            B[jo * 16 : jo * 16 + 16, ko * 8 : ko * 8 + 8],
            reduce_axis=ko,
        ),
        name="D",
    )
    s = sl.create_schedule(D)
    s[D].pragma(D.op.axis[0], "import_llvm", IR)
    text = str(sl.lower(s, [A, B, D]))
    assert "gemv_reset(&D[i, jo, 0], 16)" in text and "for ko in range(0, 4):" in text, text
    a, b, out = _run(s, [A, B, D], 5)
    np.testing.assert_allclose(out.reshape(5, M), a @ b.T, rtol=1e-5, atol=1e-5)


def test_mistakes_are_refused():
    n, A, B = _inputs()
    vadd = _vadd()
    with pytest.raises(AlgorithmError, match="takes 2 region"):
        sl.compute((n, 16), lambda i: vadd(A[i, 0:16]))
    with pytest.raises(AlgorithmError, match=r"gives the input 'y' of 'z', which is float32 of"):
        sl.compute((n, 16), lambda i: vadd(A[i, 0:16], A[i, 0:8]))
    with pytest.raises(AlgorithmError, match=r"the shape must be those 1 extents followed by"):
        sl.compute((n, 8), lambda i: vadd(A[i, 0:16], A[i, 16:32]))
    with pytest.raises(AlgorithmError, match="is a region of a tensor: the argument of a tensor"):
        sl.compute((n, 16), lambda i, j: A[i, 0:16] * 2)
    with pytest.raises(AlgorithmError, match="ranges of a constant extent, without a step"):
        sl.compute((n, 16), lambda i: vadd(A[i, 0:32:2], A[i, 0:16]))
    with pytest.raises(AlgorithmError, match="scalar_inputs"):
        sl.compute((n, 16), lambda i: vadd(A[i, 0:16], A[i, 0:16], scalar_inputs=[1.0]))
    ko = sl.reduce_axis((0, 2), name="ko")
    with pytest.raises(AlgorithmError, match="but 'z' is elementwise"):
        sl.compute((n, 16), lambda i: vadd(A[i, 0:16], A[i, 0:16], reduce_axis=ko))
    with pytest.raises(AlgorithmError, match="has a 2-dimensional shape but its function takes 1"):
        sl.compute((n, 16), lambda i: A[i, 0])
    C = sl.compute((n, 16), lambda i: vadd(A[i, 0:16], A[i, 16:32]), name="C")
    s = sl.create_schedule(C)
    with pytest.raises(TensorizeError, match="calls the intrinsic vadd in its body"):
        s[C].tensorize(C.op.axis[1], vadd)


def test_a_producer_computed_at_its_outer_loop_and_a_copy_of_the_schedule():
    n = sl.var("n")
    A0, B = sl.placeholder((n, 16), name="A0"), sl.placeholder((n, 16), name="B")
    A = sl.compute((n, 16), lambda i, j: A0[i, j] * 2.0, name="A")
    C = sl.compute((n, 16), lambda i: _vadd()(A[i, 0:16], B[i, 0:16]), name="C")
    s = sl.create_schedule(C)
    s[A].compute_at(s[C], C.op.axis[0])
    s[C].pragma(C.op.axis[0], "import_llvm", IR)
    copied = s.copy()
    assert str(sl.lower(copied, [A0, B, C])) == str(sl.lower(s, [A0, B, C]))
    assert "allocate A: float32[1, 16]" in str(sl.lower(s, [A0, B, C]))
    rng = np.random.default_rng(9)
    a, b = (rng.uniform(-1, 1, (6, 16)).astype("float32") for _ in range(2))
    out = np.full((6, 16), np.nan, "float32")
    sl.build(copied, [A0, B, C])(a, b, out)
    np.testing.assert_allclose(out, 2 * a + b, rtol=1e-6)
