"""TOPI's shape, data-movement and layout operators on schedlang, against numpy at odd shapes;
`take` and `gather` read at indices held in a tensor."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, check_definition, random


def _a(shape=(3, 5, 7)):
    return te.placeholder(shape, name="A"), random(shape)


@pytest.mark.parametrize("axes", [None, (2, 0, 1), (-1, 1, -3)])
def test_transpose(axes):
    A, a = _a()
    out = topi.transpose(A, axes)
    assert (out.name, out.op.tag) == ("T_transpose", "injective")
    check(out, [A], [a], np.transpose(a, axes))


def test_reshape_squeeze_and_expand_dims():
    A, a = _a((3, 1, 5, 1))
    check(topi.reshape(A, (5, 3)), [A], [a], a.reshape(5, 3))
    check(topi.squeeze(A), [A], [a], a.squeeze())
    check(topi.squeeze(A, axis=-1), [A], [a], a.squeeze(-1))
    out = topi.expand_dims(A, -2, 2)
    assert out.op.tag == "broadcast"
    check(out, [A], [a], a.reshape(3, 1, 5, 1, 1, 1))


def test_squeeze_and_reshape_refuse_what_does_not_fit():
    A, _ = _a()
    with pytest.raises(AlgorithmError, match="dimension 1 of 'A' is not of size 1"):
        topi.squeeze(A, axis=1)
    with pytest.raises(AlgorithmError, match="has 105 elements, the shape"):
        topi.reshape(A, (10, 10))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_joins_along_an_axis(axis):
    A, a = _a()
    B = te.placeholder((3, 5, 7), name="B")
    b = random((3, 5, 7), seed=1)
    out = topi.concatenate([A, B, A], axis=axis)
    assert (out.name, out.op.tag) == ("T_concat", "injective")
    check(out, [A, B], [a, b], np.concatenate([a, b, a], axis=axis))


def test_stack_adds_a_dimension():
    A, a = _a()
    B = te.placeholder((3, 5, 7), name="B")
    b = random((3, 5, 7), seed=1)
    check(topi.stack([A, B], axis=1), [A, B], [a, b], np.stack([a, b], axis=1))


def test_split_by_sections_and_by_indices():
    A, a = _a((3, 6, 7))
    parts = topi.split(A, 3, axis=1)
    assert [p.name for p in parts] == ["T_split_sections"] * 3
    check(parts, [A], [a], np.split(a, 3, axis=1))
    check(topi.split(A, [2, 5], axis=-1), [A], [a], np.split(a, [2, 5], axis=-1))
    with pytest.raises(AlgorithmError, match="4 sections do not divide dimension 1 of size 6"):
        topi.split(A, 4, axis=1)


@pytest.mark.parametrize(
    "begin, end, strides",
    [((0, 1, 2), (3, 5, 7), (1, 2, 3)), ((2, -1, 6), (0, 0, -8), (-1, -2, -2)), ((1,), (9,), None)],
)
def test_strided_slice_as_numpy_slices(begin, end, strides):
    A, a = _a()
    steps = strides or (1,) * len(begin)
    expected = a[tuple(slice(b, e, s) for b, e, s in zip(begin, end, steps))]
    check(topi.strided_slice(A, begin, end, strides), [A], [a], expected)


def test_where_selects_with_broadcasting():
    A, a = _a()
    C = te.placeholder((5, 1), dtype="bool", name="C")
    c = random((5, 1)) > 0
    check(topi.where(C, A, 0.0), [C, A], [c, a], np.where(c, a, 0.0).astype("float32"))


def test_layout_transform_to_blocks_of_channels_and_back():
    A, a = _a((2, 8, 5, 3))
    out = topi.layout_transform(A, "NCHW", "NCHW4c")
    assert (out.name, out.op.tag) == ("T_layout_trans", "injective")
    blocked = a.reshape(2, 2, 4, 5, 3).transpose(0, 1, 3, 4, 2)
    check(out, [A], [a], blocked)
    B = te.placeholder(blocked.shape, name="B")
    check(topi.layout_transform(B, "NCHW4c", "NHWC"), [B], [blocked], a.transpose(0, 2, 3, 1))


def test_layout_transform_fills_blocks_past_the_data_with_zeros():
    A, a = _a((2, 6, 3, 5))
    padded = np.concatenate([a, np.zeros((2, 2, 3, 5), "float32")], axis=1)
    expected = padded.reshape(2, 2, 4, 3, 5).transpose(0, 1, 3, 4, 2)
    check(topi.layout_transform(A, "NCHW", "NCHW4c"), [A], [a], expected)


def test_layouts_that_do_not_convert_are_refused():
    A, _ = _a((2, 6, 3, 5))
    with pytest.raises(AlgorithmError, match="from NCHW to NCDHW"):
        topi.layout_transform(A, "NCHW", "NCDHW")
    with pytest.raises(AlgorithmError, match="is not a layout"):
        topi.layout_transform(A, "NCHW", "NC4")


def test_take_and_gather_name_their_stages():
    A, _ = _a()
    indices = te.placeholder((4,), dtype="int32", name="I")
    assert topi.take(A, indices, axis=1).name == "T_take"
    assert topi.take(A, indices, axis=1).shape[1].value == 4
    gathered = topi.gather(A, 2, te.placeholder((3, 5, 2), dtype="int32", name="G"))
    assert (gathered.name, gathered.op.tag) == ("T_gather", "injective")


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
def test_take_and_gather_are_defined_as_numpy_defines_them(mode):
    A, a = _a()
    indices = te.placeholder((2, 3), dtype="int32", name="I")
    ind = (
        np.array([[0, 4, -2], [9, 1, 3]], "int32")
        if mode != "fast"
        else np.array([[0, 4, 2]] * 2, "int32")
    )
    out = topi.take(A, indices, axis=1, mode=mode)
    expected = np.take(a, ind, 1, mode="clip" if mode == "fast" else mode)
    check_definition(out, [A, indices], [a, ind], expected)
    flat = te.placeholder((4,), dtype="int32", name="F")
    ind = np.array([0, 104, 57, 200], "int32")
    check_definition(
        topi.take(A, flat, mode="clip"), [A, flat], [a, ind], np.take(a, ind, mode="clip")
    )
    G = te.placeholder((3, 5, 2), dtype="int32", name="G")
    g = random((3, 5, 2), "int32", 0, 7)
    check_definition(topi.gather(A, -1, G), [A, G], [a, g], np.take_along_axis(a, g, axis=2))


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_along_an_axis(mode):
    A, a = _a()
    indices = te.placeholder((2, 3), dtype="int32", name="I")
    ind = np.array([[0, 4, -2], [9, 1, 3]], "int32")
    check(
        topi.take(A, indices, axis=1, mode=mode),
        [A, indices],
        [a, ind],
        np.take(a, ind, 1, mode=mode),
    )


def test_take_from_the_flattened_data():
    A, a = _a()
    indices = te.placeholder((4,), dtype="int32", name="I")
    ind = np.array([0, 104, 57, 200], "int32")
    check(topi.take(A, indices), [A, indices], [a, ind], np.take(a, ind, mode="clip"))


def test_gather_along_the_last_axis():
    A, a = _a()
    G = te.placeholder((3, 5, 2), dtype="int32", name="G")
    g = random((3, 5, 2), "int32", 0, 7)
    check(topi.gather(A, -1, G), [A, G], [a, g], np.take_along_axis(a, g, axis=2))
