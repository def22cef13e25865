"""The alignment the translator states on each access (`codegen.alignment`)."""

from __future__ import annotations

import pytest

import schedlang as sl
from schedlang.codegen.llvm.alignment import access_align, factor
from schedlang.ir.expr import Const
from schedlang.loopir.core.nodes import Buffer

i, j = sl.var("i"), sl.var("j")


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (Const(0, "int32"), 1 << 16),
        (Const(12, "int32"), 4),
        (Const(-8, "int32"), 8),
        (i, 1),
        (i * 4, 4),
        (i * 4 + 8, 4),
        (i * 4 + 2, 2),
        (i * 6 - j * 12, 2),
        (i * 4 * (j * 2), 8),
        (i // 4 * 4, 4),
        (i % 4, 1),
        (-(i % 2 * 4096) - j % 2 * 4096 + 4096, 4096),  # isl's way of writing a zero
    ],
)
def test_power_of_two_factor(expr, expected):
    assert factor(expr, {}) == expected


def test_known_factor_of_a_variable():
    assert factor(i * 2 + j, {j: 1 << 16}) == 2


def _buffer(shape, dtype="float32", strides=None):
    return Buffer(
        "X",
        tuple(Const(n, "int32") for n in shape),
        dtype,
        "shared",
        None if strides is None else tuple(Const(s, "int32") for s in strides),
    )


@pytest.mark.parametrize(
    ("shape", "indices", "base", "expected"),
    [
        ((8, 64), (i, j * 4), 16, 16),  # rows of 256 bytes, column a multiple of 4 floats
        ((8, 64), (i, j * 4 + 1), 16, 4),
        ((8, 64), (i, j * 2), 16, 8),
        ((8, 6), (i, j * 4), 16, 8),  # rows of 24 bytes: every other row is 8 bytes off
        ((8, 64), (i, j * 4), 4, 4),  # nothing beyond the base alignment
        ((8, 64), (i, j), 16, 4),
    ],
)
def test_access_alignment(shape, indices, base, expected):
    assert access_align(_buffer(shape), indices, base, {}) == expected


def test_strided_buffers_use_their_strides():
    padded = _buffer((8, 64), strides=(68, 1))  # storage_align pads rows to 68 floats
    assert access_align(padded, (i, j * 4), 16, {}) == 16
    odd = _buffer((8, 64), strides=(65, 1))
    assert access_align(odd, (i, j * 4), 16, {}) == 4


def test_float64_is_never_below_its_size():
    assert access_align(_buffer((8, 8), "float64"), (i, j), 16, {}) == 8
