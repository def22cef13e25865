"""`sl.unpack_int4` compiled: every byte's two nibbles, converted to float as a dequantising
kernel converts them, from scalar and vectorized CPU loops and from a GPU kernel (simulated,
its PTX assembled by ptxas where it is installed), against the reference."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from tests.cuda.ptxas import assemble

BYTES = np.random.default_rng(5).permutation(np.arange(256, dtype=np.uint8))


def _unpacked(dtype):
    """Q (512,): the nibbles of P (256,) in order, low nibble first, as `dtype`."""
    packed = sl.placeholder((256,), "uint8", name="P")
    out = sl.compute(
        (512,), lambda k: sl.unpack_int4(packed[k // 2], k % 2).astype(dtype), name="Q"
    )
    return packed, out


def _checked_reference(packed, out) -> np.ndarray:
    """``(reference, poisoned)``: the reference's Q, checked to hold the nibbles in order,
    and an array of its dtype full of NaN (or -1) for a kernel to overwrite."""
    values = np.empty(512, np.uint8)
    values[0::2], values[1::2] = BYTES & 15, BYTES >> 4
    reference = sl.evaluate(out, {packed: BYTES})
    np.testing.assert_array_equal(reference.astype(np.int64), values)
    poison = -1 if reference.dtype.kind == "i" else np.nan
    return reference, np.full(512, poison).astype(reference.dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int32"])
@pytest.mark.parametrize("lanes", [1, 8])
def test_unpack_on_the_cpu_matches_the_reference(dtype, lanes):
    packed, out = _unpacked(dtype)
    s = sl.create_schedule(out)
    if lanes > 1:
        _, inner = s[out].split(out.op.axis[0], factor=lanes)
        s[out].vectorize(inner)
    reference, got = _checked_reference(packed, out)
    sl.build(s, [packed, out], target="cpu")(BYTES, got)
    np.testing.assert_array_equal(got, reference)


def _gpu_unpack(dtype, lanes: int = 1):
    """The unpacking on the GPU, a thread per `lanes` adjacent nibbles (vectorized)."""
    packed, out = _unpacked(dtype)
    s = sl.create_schedule(out)
    rest, inner = s[out].split(out.op.axis[0], factor=lanes)
    block, thread = s[out].split(rest, factor=64)
    s[out].bind(block, sl.thread_axis("blockIdx.x"))
    s[out].bind(thread, sl.thread_axis("threadIdx.x"))
    if lanes > 1:
        s[out].vectorize(inner)
    return packed, out, sl.build(s, [packed, out], target="cuda -arch=sm_90")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("lanes", [1, 4])
def test_unpack_on_the_gpu_matches_the_reference(dtype, lanes):
    packed, out, kernel = _gpu_unpack(dtype, lanes)
    reference, got = _checked_reference(packed, out)
    kernel.simulate(BYTES, got)
    np.testing.assert_array_equal(got, reference)
    assemble(kernel.ptx)


@pytest.mark.parametrize(("lanes", "biased"), [(1, "17152;"), (4, "1124090624;")])
def test_a_nibble_becomes_bfloat16_by_its_bits_on_the_gpu(lanes, biased):
    """``0x4300 | q`` (the bfloat16 128 + q; 0x43004300 for two lanes) less 128 by
    ``sub.rn.bf16``: no float32 on the way, no conversion, no rounding."""
    kernel = _gpu_unpack("bfloat16", lanes)[2]
    body = kernel.ptx.split(".entry")[1]
    assert re.search(rf"or\.b(16|32)\s+%r?s?\d+, %r?s?\d+, {biased}", body), body
    assert ("sub.rn.bf16x2" if lanes > 1 else "sub.rn.bf16 ") in body
    assert not re.search(r"cvt(\.r\w+)?\.(f32|bf16)", body)  # integer moves only
    assert "add.f32" not in body and "sub.f32" not in body


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("lanes", [1, 4])
def test_unpack_runs_on_the_gpu(dtype, lanes):
    packed, out, kernel = _gpu_unpack(dtype, lanes)
    reference, got = _checked_reference(packed, out)
    kernel(BYTES, got)
    np.testing.assert_array_equal(got, reference)


@pytest.mark.parametrize("source", ["bool", "uint8", "int8", "int16", "uint32", "int32", "int64"])
@pytest.mark.parametrize("lanes", [1, 2, 8])
def test_a_small_integer_converts_to_bfloat16_exactly_from_any_source(source, lanes):
    """An integer masked below 128 (0 to 127: the bits ``0x4300 | v`` less 128) from every
    integer width, negative values included, scalar and in vectors, on the CPU."""
    rng = np.random.default_rng(3)
    values = rng.integers(-300, 300, 64) if source != "bool" else rng.integers(0, 2, 64)
    values = values.astype(source)
    a = sl.placeholder((64,), source, name="A")
    mask = True if source == "bool" else 127
    out = sl.compute((64,), lambda i: (a[i] & mask).astype("bfloat16"), name="B")
    s = sl.create_schedule(out)
    if lanes > 1:
        _, inner = s[out].split(out.op.axis[0], factor=lanes)
        s[out].vectorize(inner)
    got = np.full(64, np.nan, ml_dtypes.bfloat16)
    sl.build(s, [a, out], target="cpu")(values, got)
    expected = (values & mask).astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))


@pytest.mark.parametrize(
    ("mask", "dtype"), [(255, "bfloat16"), (511, "bfloat16"), (4095, "float16")]
)
def test_a_masked_integer_is_rounded_unless_the_mask_fits_the_significand(mask, dtype):
    """An integer masked by 15 (a nibble) or 255 converts to bfloat16 exactly and is not
    rounded; masked by 511, 257 and 259 are ties that round to even (256 and 260), as the
    reference rounds them; float16 likewise past 2048. The result is read as float32, so a
    conversion left unrounded would show."""
    values = np.array([3, 255, 257, 259, 2049, 2051, 4093, -1], np.int32)
    a = sl.placeholder((8,), "int32", name="A")
    out = sl.compute((8,), lambda i: (a[i] & mask).astype(dtype).astype("float32"), name="B")
    reference = sl.evaluate(out, {a: values})
    narrow = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
    expected = (values & mask).astype(np.float32).astype(narrow).astype(np.float32)
    np.testing.assert_array_equal(reference, expected)
    kernel = sl.build(sl.create_schedule(out), [a, out], target="cpu")
    got = np.full(8, np.nan, np.float32)
    kernel(values, got)
    np.testing.assert_array_equal(got, expected)
