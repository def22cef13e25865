"""bfloat16 ``+``, ``-`` and ``*`` by sm_90's ``add/sub/mul.rn.bf16`` on the operands' bits,
where the reference computes in float32 and rounds: the same value (float32 holds more than
twice bfloat16's digits and two more), without a conversion instruction, which a dequantising
kernel waits on (two a weight)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from tests.cuda.kernels import spread

N = 4096


def _kernel(arch, lanes=1):
    """Three bfloat16 outputs of bfloat16 A and B: A - B, A * B + A (a product rounded, then
    a sum), and (A - B) * 0.1 (a constant operand, rounded to bfloat16 as the reference does);
    `lanes` a vector."""
    a = sl.placeholder((N,), "bfloat16", name="A")
    b = sl.placeholder((N,), "bfloat16", name="B")
    outs = [
        sl.compute((N,), lambda i: a[i] - b[i], name="D"),
        sl.compute((N,), lambda i: a[i] * b[i] + a[i], name="P"),
        sl.compute((N,), lambda i: (a[i] - b[i]) * sl.const(0.1, "bfloat16"), name="S"),
    ]
    s = sl.create_schedule([t.op for t in outs])
    for t in outs:
        spread(s, t, lanes)
    return a, b, outs, sl.build(s, [a, b, *outs], target=f"cuda -arch={arch}")


def test_sm_90_computes_bfloat16_in_bfloat16_and_earlier_gpus_round_float32():
    ptx = _kernel("sm_90a")[3].ptx
    assert ptx.count("sub.rn.bf16") == 2 and ptx.count("mul.rn.bf16") == 2
    assert ptx.count("add.rn.bf16") == 1 and "cvt.rn.bf16.f32" not in ptx
    older = _kernel("sm_80")[3].ptx
    assert ".rn.bf16 " not in older and older.count("cvt.rn.bf16.f32") == 5


def test_a_vector_computes_two_lanes_an_instruction():
    ptx = _kernel("sm_90a", lanes=4)[3].ptx
    assert ptx.count("sub.rn.bf16x2") == 4 and ptx.count("mul.rn.bf16x2") == 4
    assert ptx.count("add.rn.bf16x2") == 2 and "cvt.rn.bf16" not in ptx


def _data(seed):
    """Random magnitudes over bfloat16's range, with infinities, NaN, subnormals and values
    whose products overflow."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N) * 10.0 ** rng.integers(-40, 39, N)
    x[:8] = [np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-39, -2e-40, 0.0]
    return x.astype(np.float32).astype(ml_dtypes.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("lanes", [1, 4])
def test_the_same_bits_as_the_reference(lanes):
    a, b, outs, kernel = _kernel("sm_90a", lanes)
    x, y = _data(1), _data(2)
    got = [np.zeros(N, ml_dtypes.bfloat16) for _ in outs]
    kernel(x, y, *got)
    for out, t in zip(got, outs):
        want = sl.reference(t, {a: x, b: y})
        finite = ~np.isnan(want.astype(np.float32))
        np.testing.assert_array_equal(out.view(np.uint16)[finite], want.view(np.uint16)[finite])
        assert np.isnan(out.astype(np.float32)[~finite]).all()


def test_a_vector_of_nibbles_becomes_bfloat16_by_its_bits():
    """``(int32(x) >> 4 & 15) - z`` four lanes at a time, as a packed weight is unpacked: each
    pair of lanes masked below 16 is a bfloat16 pair by its bits (``0x4300 | v`` in each
    half, one byte permute and one mask for two lanes, less 128 by one ``sub.rn.bf16x2``),
    exact, so nothing rounds and nothing converts."""
    x = sl.placeholder((N,), "uint8", name="X")
    z = sl.placeholder((N,), "bfloat16", name="Z")
    q = sl.compute((N,), lambda i: (x[i].astype("int32") >> 4) & 15, name="Q")
    nibble = sl.compute((N,), lambda i: q[i].astype("bfloat16") - z[i], name="W")
    s = sl.create_schedule(nibble.op)
    s[q].compute_inline()
    spread(s, nibble, lanes=4)
    ptx = sl.build(s, [x, z, nibble], target="cuda -arch=sm_90a").ptx
    assert not re.search(r"cvt\.(rn|rz|rni|f32)", ptx)
    assert ptx.count("sub.rn.bf16x2") == 4  # less 128, then less z: two pairs each
    # each pair of bytes spread beside the bias byte 0x43 (67), masked to 0x430q (`byte_fields`)
    assert len(re.findall(r"prmt\.b32\s+%r\d+, 67, %r\d+, 0x[57]0[46]U;", ptx)) == 2
    assert len(re.findall(r"and\.b32\s+%r\d+, %r\d+, 1125073679;", ptx)) == 2  # 0x430f430f
    assert "1258291200" not in ptx and "0x4B000000" not in ptx.upper()  # no float32 on the way
