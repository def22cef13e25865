"""Packed int4 weights (`sl.unpack_int4`, `sl.packed_int4`): the nibbles the reference reads,
on every byte, and the layouts that are refused when the algorithm is defined."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl

from .util import random_array, rng

EVERY_BYTE = np.arange(256, dtype=np.uint8)


def _nibbles(which):
    packed = sl.placeholder((256,), "uint8", name="P")
    out = sl.compute((256,), lambda i: sl.unpack_int4(packed[i], which), name="Q")
    return packed, out


@pytest.mark.parametrize("which", [0, 1])
def test_unpack_int4_reads_the_low_nibble_for_0_and_the_high_for_1(which):
    packed, out = _nibbles(which)
    got = sl.evaluate(out, {packed: EVERY_BYTE})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (EVERY_BYTE >> 4 * which) & 15)


def test_unpack_int4_with_the_nibble_an_index_expression_unpacks_rows_in_order():
    """Row k of a packed weight is ``unpack_int4(packed[k // 2, n], k % 2)``: even rows in the
    low nibbles, as torch's and AWQ's packers store them."""
    gen = rng()
    values = random_array(gen, (14, 5), "uint8", 0, 15)
    packed_np = values[0::2] | (values[1::2] << 4)
    packed = sl.placeholder((7, 5), "uint8", name="P")
    rows = sl.compute((14, 5), lambda k, n: sl.unpack_int4(packed[k // 2, n], k % 2), name="Q")
    np.testing.assert_array_equal(sl.evaluate(rows, {packed: packed_np}), values)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dequantised_weight_is_exact_in_the_activations_dtype(dtype):
    """``(q - zero) * scale`` in float16 or bfloat16: the difference is exact, the product
    rounded once, as numpy rounds it in that dtype."""
    gen = rng()
    k, n, group = 64, 9, 32
    wq, scale, zero = sl.packed_int4((k, n), group, dtype)
    w = sl.compute(
        (k, n),
        lambda r, j: (
            (sl.unpack_int4(wq[r // 2, j], r % 2) - zero[r // group, j]) * scale[r // group, j]
        ),
        name="W",
    )
    packed = random_array(gen, (k // 2, n), "uint8", 0, 255)
    scales = random_array(gen, (k // group, n), dtype, 0.01, 0.5)
    zeros = random_array(gen, (k // group, n), "int32", 0, 15).astype(scales.dtype)
    got = sl.evaluate(w, {wq: packed, scale: scales, zero: zeros})
    q = np.empty((k, n), np.uint8)
    q[0::2], q[1::2] = packed & 15, packed >> 4
    want = (q.astype(scales.dtype) - np.repeat(zeros, group, 0)) * np.repeat(scales, group, 0)
    assert got.dtype == scales.dtype
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_packed_int4_names_and_shapes_its_placeholders():
    n = sl.var("n")
    wq, scale, zero = sl.packed_int4((256, n), 128, "bfloat16", name="W1")
    assert (wq.name, wq.dtype, str(wq.shape[0]), wq.shape[1]) == ("W1q", "uint8", "128", n)
    for tensor, name in ((scale, "W1_scale"), (zero, "W1_zero")):
        assert (tensor.name, tensor.dtype, str(tensor.shape[0])) == (name, "bfloat16", "2")


@pytest.mark.parametrize(
    ("shape", "group", "dtype", "message"),
    [
        ((7, 8), 7, "float16", r"K = 7 is odd, but a byte holds the int4 values of two rows"),
        ((96, 8), 64, "float16", r"group 64 does not divide K = 96, which would leave a last"),
        ((sl.var("K"), 8), 32, "float16", r"K must be an int, not 'K'"),
        ((64, 8), 0, "float16", r"group must be a positive int \(rows per scale\), not 0"),
        ((64, 8), 2.0, "float16", r"group must be a positive int .*, not 2\.0"),
        ((64, 8), 32, "int32", r"scales and zeros are floats .*, not int32"),
        ((64,), 32, "float16", r"shape must be \(K, N\), the unpacked weight's, not \(64,\)"),
    ],
)
def test_packed_int4_refuses_a_layout_it_cannot_hold(shape, group, dtype, message):
    with pytest.raises(sl.AlgorithmError, match=message):
        sl.packed_int4(shape, group, dtype)


def test_unpack_int4_refuses_a_byte_of_another_dtype_and_a_third_nibble():
    signed = sl.placeholder((4,), "int8", name="B")
    with pytest.raises(sl.AlgorithmError, match=r"a uint8, but 'B\[0\]' is int8"):
        sl.unpack_int4(signed[0], 0)
    packed = sl.placeholder((4,), "uint8", name="P")
    with pytest.raises(sl.AlgorithmError, match=r"nibble is 2, but a byte has two"):
        sl.unpack_int4(packed[0], 2)
    with pytest.raises(sl.AlgorithmError, match=r"nibble '0\.5' is float32"):
        sl.unpack_int4(packed[0], 0.5)


def test_an_odd_k_packed_by_hand_is_a_read_outside_the_packed_tensor():
    """Without `packed_int4`, a packed tensor of K // 2 rows for an odd K misses the last
    row's byte: the read is refused when the algorithm is lowered, as any read outside."""
    wq = sl.placeholder((3, 4), "uint8", name="Wq")
    w = sl.compute((7, 4), lambda k, n: sl.unpack_int4(wq[k // 2, n], k % 2), name="W")
    with pytest.raises(sl.AlgorithmError, match=r"reads 'Wq\[k // 2, n\]' out of bounds"):
        sl.lower(sl.create_schedule(w), [wq, w])
