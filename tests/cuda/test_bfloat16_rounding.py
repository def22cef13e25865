"""float32 rounded to bfloat16 by the GPU's ``cvt.rn.bf16.f32`` from sm_80 on (one instruction
for the six of the integer rounding; two lanes an instruction, ``cvt.rn.bf16x2.f32``, in a
vectorized store), to the reference's bits: ties to even, overflow to infinity, NaN kept
NaN."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from tests.cuda.kernels import spread


def _kernel(arch, lanes=1):
    a = sl.placeholder((1000,), "float32", name="A")
    b = sl.compute((1000,), lambda i: (a[i] * 3.0).astype("bfloat16"), name="B")
    s = sl.create_schedule(b.op)
    spread(s, b, lanes)
    return a, b, sl.build(s, [a, b], target=f"cuda -arch={arch}")


def _data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1000).astype(np.float32) * 100
    ties = (np.arange(100, dtype=np.uint32) << 16 | 0x8000).view(np.float32) / 3  # halfway
    x[:100] = ties
    x[100:104] = [np.inf, -np.inf, np.nan, 3e38]
    return x


def test_one_instruction_from_sm_80_and_the_integer_rounding_before():
    assert "cvt.rn.bf16.f32" in _kernel("sm_90")[2].ptx
    assert "cvt.rn.bf16.f32" not in _kernel("sm_75")[2].ptx


def test_a_vectorized_store_rounds_two_lanes_an_instruction():
    ptx = _kernel("sm_90", lanes=8)[2].ptx
    assert ptx.count("cvt.rn.bf16x2.f32") == 4 and "setp.nan" not in ptx
    assert "cvt.rn.bf16x2.f32" not in _kernel("sm_75", lanes=8)[2].ptx


def test_an_odd_vector_rounds_its_pairs_and_its_last_lane_alone():
    """Five lanes: two pairs, each one instruction, and the fifth lane alone; no lane takes
    the integer rounding (it did whole, an odd vector having no pair for its last lane)."""
    ptx = _kernel("sm_90", lanes=5)[2].ptx
    assert ptx.count("cvt.rn.bf16x2.f32") == 2 and ptx.count("cvt.rn.bf16.f32") == 1
    assert "setp.nan" not in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("lanes", [1, 5, 8])
def test_the_same_bits_as_the_reference(lanes):
    a, b, kernel = _kernel("sm_90", lanes)
    x = _data()
    out = np.zeros(1000, ml_dtypes.bfloat16)
    kernel(x, out)
    want = sl.reference(b, {a: x})
    finite = ~np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(out.view(np.uint16)[finite], want.view(np.uint16)[finite])
    assert np.isnan(out.astype(np.float32)[~finite]).all()


def _masked(loads: bool):
    """B = A * 3 rounded to bfloat16 where A > 0, else a bfloat16 zero: an arm that reads
    memory takes a branch, whose values join at a phi; or, with no load in the arms, a
    choice between values of the index (one select)."""
    a = sl.placeholder((1000,), "float32", name="A")
    zero = sl.const(0.0, "bfloat16")

    def value(i):
        if loads:
            return sl.if_then_else(a[i] > 0, (a[i] * 3.0).astype("bfloat16"), zero)
        return sl.if_then_else(i % 3 == 0, (i.astype("float32") * 0.37).astype("bfloat16"), zero)

    b = sl.compute((1000,), value, name="B")
    s = sl.create_schedule(b.op)
    spread(s, b, 1)
    args = [a, b] if loads else [b]
    return a, b, sl.build(s, args, target="cuda -arch=sm_90")


@pytest.mark.parametrize("loads", [True, False])
def test_a_masked_value_is_rounded_once(loads):
    """The choice is made between the arms' bfloat16 bits, so the stored value is the arm's
    rounding: made between their widened floats, it was rounded again on the way to memory
    (masked attention probabilities: a second conversion and three integer instructions)."""
    assert _masked(loads)[2].ptx.count("cvt.rn.bf16.f32") == 1


@pytest.mark.gpu
def test_a_masked_value_has_the_reference_bits():
    a, b, kernel = _masked(True)
    x = _data()
    out = np.full(1000, np.nan, ml_dtypes.bfloat16)
    kernel(x, out)
    want = sl.reference(b, {a: x})
    finite = ~np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(out.view(np.uint16)[finite], want.view(np.uint16)[finite])


def _widening(target):
    """B = A * 3 in float32 from bfloat16 A, eight lanes a vector: A's pairs widened from
    their 32-bit words."""
    a = sl.placeholder((1000,), "bfloat16", name="A")
    b = sl.compute((1000,), lambda i: a[i].astype("float32") * 3.0, name="B")
    s = sl.create_schedule(b.op)
    rest, lane = s[b].split(b.op.axis[0], factor=8)
    if target == "cuda":
        outer, inner = s[b].split(rest, factor=128)
        s[b].bind(outer, sl.thread_axis("blockIdx.x"))
        s[b].bind(inner, sl.thread_axis("threadIdx.x"))
    s[b].vectorize(lane)
    return a, b, sl.build(s, [a, b], target=target)


def test_a_vector_is_widened_from_its_words():
    """The low lane of each word shifted up, the high one masked in place: one instruction a
    lane, the same values (on the CPU, which takes the same conversion)."""
    ptx = _widening("cuda")[2].ptx
    assert "and.b32" in ptx and "-65536" in ptx and "cvt.u32.u16" not in ptx
    a, b, kernel = _widening("cpu")
    x = _data().astype(ml_dtypes.bfloat16)
    out = np.full(1000, np.nan, np.float32)
    kernel(x, out)
    want = sl.reference(b, {a: x})
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))
