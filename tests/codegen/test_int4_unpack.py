"""`sl.unpack_int4` compiled: every byte's two nibbles, converted to float as a dequantising
kernel converts them, from scalar and vectorized CPU loops and from a GPU kernel (simulated,
its PTX assembled by ptxas where it is installed), against the reference."""

from __future__ import annotations

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


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_unpack_on_the_gpu_matches_the_reference(dtype):
    packed, out = _unpacked(dtype)
    s = sl.create_schedule(out)
    block, thread = s[out].split(out.op.axis[0], factor=64)
    s[out].bind(block, sl.thread_axis("blockIdx.x"))
    s[out].bind(thread, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [packed, out], target="cuda -arch=sm_90")
    reference, got = _checked_reference(packed, out)
    kernel.simulate(BYTES, got)
    np.testing.assert_array_equal(got, reference)
    assemble(kernel.ptx)
