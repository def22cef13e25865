"""Attributes of tensors, ops and iteration variables."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import Const, Var


def _value(e):
    assert isinstance(e, Const), e
    return e.value


def test_placeholder_attributes():
    M = sl.var("M")
    A = sl.placeholder((M, 5), "float16", name="A")
    assert A.name == "A" and A.op.name == "A"
    assert A.dtype == "float16"
    assert A.ndim == 2
    assert A.shape[0] is M and _value(A.shape[1]) == 5
    assert A.op.input_tensors == ()
    assert repr(A) == "Tensor(A, shape=(M, 5), float16)"


def test_placeholder_defaults_and_scalar_shape():
    B = sl.placeholder(7)
    assert B.dtype == "float32" and B.ndim == 1 and _value(B.shape[0]) == 7
    assert B.name == "placeholder"


def test_compute_attributes_and_axis_names():
    n = sl.var("n")
    A = sl.placeholder((n, 13), name="A")
    B = sl.placeholder((13,), name="B")
    C = sl.compute((n, 13), lambda row, col: A[row, col] * B[col] + A[row, 0], name="C", tag="ew")
    assert C.name == "C" and C.op.tag == "ew"
    assert C.dtype == "float32" and C.ndim == 2
    assert [iv.name for iv in C.op.axis] == ["row", "col"]
    assert all(iv.kind == "data" for iv in C.op.axis)
    assert C.op.axis[0].dom.extent is n and _value(C.op.axis[1].dom.extent) == 13
    assert all(_value(iv.dom.min) == 0 for iv in C.op.axis)
    assert C.shape[0] is n and _value(C.shape[1]) == 13
    assert C.op.reduce_axis == ()
    assert C.op.input_tensors == (A, B)
    assert isinstance(C.op.axis[0].var, Var) and C.op.axis[0].dtype == "int32"


def test_star_args_lambda_gets_numbered_axes():
    A = sl.placeholder((2, 3, 4), name="A")
    C = sl.compute((2, 3, 4), lambda *ix: A[ix] + 1.0, name="C")
    assert [iv.name for iv in C.op.axis] == ["i0", "i1", "i2"]
    D = sl.compute(A.shape, lambda i, *rest: A[(i, *rest)], name="D")
    assert [iv.name for iv in D.op.axis] == ["i0", "i1", "i2"]


def test_reduce_axis_attributes():
    K = sl.var("K")
    k = sl.reduce_axis((0, K), name="k")
    assert k.name == "k" and k.kind == "reduce" and k.dtype == "int32"
    assert _value(k.dom.min) == 0 and k.dom.extent is K
    r = sl.reduce_axis((2, 9), name="r")
    assert _value(r.dom.min) == 2 and _value(r.dom.extent) == 7
    s = sl.reduce_axis(5)
    assert s.name == "rv" and _value(s.dom.min) == 0 and _value(s.dom.extent) == 5
    t = sl.reduce_axis((1, K), name="t")
    assert _value(t.dom.min) == 1 and str(t.dom.extent) == "K - 1"
    assert str(t.dom) == "[1, K)"


def test_compute_with_reduction_attributes():
    M, K = sl.var("M"), sl.var("K")
    A = sl.placeholder((M, K), name="A")
    k = sl.reduce_axis((0, K), name="k")
    B = sl.compute((M,), lambda i: sl.sum(A[i, k], axis=k), name="B")
    assert B.op.reduce_axis == (k,) and B.op.reduce_axis[0] is k
    assert [iv.name for iv in B.op.axis] == ["i"]
    assert B.op.input_tensors == (A,)
    assert B.dtype == "float32"


def test_input_tensors_are_unique_in_order_of_first_read():
    A = sl.placeholder((7,), name="A")
    B = sl.placeholder((7,), name="B")
    C = sl.compute((7,), lambda i: B[i] + A[i] * B[6 - i] + A[0], name="C")
    assert C.op.input_tensors == (B, A)
    D = sl.compute((7,), lambda i: C[i] + A[i], name="D")
    assert D.op.input_tensors == (C, A)


def test_tensors_are_equal_by_op_and_usable_as_keys():
    A = sl.placeholder((7,), name="A")
    same = A.op.output(0)
    assert same == A and hash(same) == hash(A)
    assert {A: 1}[same] == 1
    assert A != sl.placeholder((7,), name="A")


def test_compute_dtype_follows_the_body():
    A = sl.placeholder((7,), "int8", name="A")
    assert sl.compute((7,), lambda i: A[i] + 1).dtype == "int8"
    assert sl.compute((7,), lambda i: A[i] > 1).dtype == "bool"
    assert sl.compute((7,), lambda i: A[i] * 0.5).dtype == "float32"
    assert sl.compute((7,), lambda i: 1.0).dtype == "float32"


def test_tensors_are_not_iterable():
    A = sl.placeholder((7,), name="A")
    with pytest.raises(TypeError, match="tensor 'A' is not iterable: index it"):
        list(A)
    with pytest.raises(TypeError, match="not iterable"):
        _ = 3 in A


def test_a_tensor_called_with_indices_reads_like_indexing():
    a = sl.placeholder((3, 4), name="A")
    called = sl.compute((3, 4), lambda i, j: a(i, j) * 2 + a(2 - i, j), name="B")
    x = np.random.default_rng(1).uniform(-1, 1, (3, 4)).astype("float32")
    np.testing.assert_allclose(sl.reference(called, {a: x}), x * 2 + x[::-1])
    with pytest.raises(sl.AlgorithmError, match="indexed with 1 index"):
        a(0)
