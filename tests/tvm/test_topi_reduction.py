"""TOPI's reductions on schedlang: TOPI's axis rules (None, negative, repeated, keepdims,
0-d results), names and tags, against numpy at odd shapes."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, random

SHAPE = (3, 5, 7)


@pytest.mark.parametrize(
    "op, ref", [(topi.sum, np.sum), (topi.max, np.max), (topi.min, np.min), (topi.prod, np.prod)]
)
@pytest.mark.parametrize(
    "axis, keepdims", [(None, False), (1, False), (-1, True), ((0, 2), False), ((2, -3, 0), True)]
)
def test_comm_reductions(op, ref, axis, keepdims):
    A = te.placeholder(SHAPE, name="A")
    a = random(SHAPE, low=0.5, high=1.5)
    out = op(A, axis=axis, keepdims=keepdims)
    assert (out.name, out.op.tag) == ("A_red", "comm_reduce")
    numpy_axis = tuple(sorted({x % 3 for x in axis})) if isinstance(axis, tuple) else axis
    check(out, [A], [a], ref(a, axis=numpy_axis, keepdims=keepdims), rtol=1e-5)


def test_a_full_reduction_is_a_0d_tensor():
    A = te.placeholder(SHAPE, name="A")
    assert topi.sum(A).shape == ()
    assert tuple(int(n.value) for n in topi.sum(A, keepdims=True).shape) == (1, 1, 1)


@pytest.mark.parametrize("op, ref", [(topi.argmax, np.argmax), (topi.argmin, np.argmin)])
@pytest.mark.parametrize("axis, keepdims", [(1, False), (-1, True), (0, False)])
def test_argmax_and_argmin(op, ref, axis, keepdims):
    A = te.placeholder(SHAPE, name="A")
    a = random(SHAPE)
    out = op(A, axis=axis, keepdims=keepdims)
    assert out.dtype == "int32" and out.op.tag == "comm_reduce_idx"
    assert out.op.input_tensors[0].name.startswith("A_red_temp")
    check(out, [A], [a], ref(a, axis=axis, keepdims=keepdims))


def test_argmax_over_several_axes_gives_the_flat_index_of_the_reduced_ones():
    A = te.placeholder(SHAPE, name="A")
    a = random(SHAPE)
    flat = a.transpose(1, 0, 2).reshape(5, 21)
    check(topi.argmax(A, axis=(0, 2)), [A], [a], flat.argmax(axis=1))


def test_ties_go_to_the_first_index_or_the_last():
    A = te.placeholder((2, 6), dtype="int32", name="A")
    a = np.array([[1, 4, 4, 0, 4, 2], [3, 3, 1, 1, 0, 3]], "int32")
    check(topi.argmax(A, axis=1), [A], [a], np.array([1, 0]))
    check(topi.argmax(A, axis=1, select_last_index=True), [A], [a], np.array([4, 5]))
    check(topi.argmin(A, axis=1, select_last_index=True), [A], [a], np.array([3, 4]))


def test_all_and_any_reduce_bools():
    A = te.placeholder((4, 5), dtype="bool", name="A")
    a = random((4, 5)) > 0
    check([topi.all(A, axis=1), topi.any(A, axis=0)], [A], [a], [a.all(1), a.any(0)])


def test_an_axis_out_of_range_is_refused():
    A = te.placeholder(SHAPE, name="A")
    with pytest.raises(AlgorithmError, match="axis 3 is out of range for 3 dimensions"):
        topi.sum(A, axis=3)
