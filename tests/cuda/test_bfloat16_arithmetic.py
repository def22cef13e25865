"""bfloat16 ``+``, ``-`` and ``*`` by sm_90's ``add/sub/mul.rn.bf16`` on the operands' bits,
where the reference computes in float32 and rounds: the same value (float32 holds more than
twice bfloat16's digits and two more), without a conversion instruction, which a dequantising
kernel waits on (two a weight)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl

N = 4096


def _kernel(arch):
    """Three bfloat16 outputs of bfloat16 A and B: A - B, A * B + A (a product rounded, then
    a sum), and (A - B) * 0.1 (a constant operand, rounded to bfloat16 as the reference does)."""
    a = sl.placeholder((N,), "bfloat16", name="A")
    b = sl.placeholder((N,), "bfloat16", name="B")
    outs = [
        sl.compute((N,), lambda i: a[i] - b[i], name="D"),
        sl.compute((N,), lambda i: a[i] * b[i] + a[i], name="P"),
        sl.compute((N,), lambda i: (a[i] - b[i]) * sl.const(0.1, "bfloat16"), name="S"),
    ]
    s = sl.create_schedule([t.op for t in outs])
    for t in outs:
        outer, inner = s[t].split(t.op.axis[0], factor=128)
        s[t].bind(outer, sl.thread_axis("blockIdx.x"))
        s[t].bind(inner, sl.thread_axis("threadIdx.x"))
    return a, b, outs, sl.build(s, [a, b, *outs], target=f"cuda -arch={arch}")


def test_sm_90_computes_bfloat16_in_bfloat16_and_earlier_gpus_round_float32():
    ptx = _kernel("sm_90a")[3].ptx
    assert ptx.count("sub.rn.bf16") == 2 and ptx.count("mul.rn.bf16") == 2
    assert ptx.count("add.rn.bf16") == 1 and "cvt.rn.bf16.f32" not in ptx
    older = _kernel("sm_80")[3].ptx
    assert ".rn.bf16 " not in older and older.count("cvt.rn.bf16.f32") == 5


def _data(seed):
    """Random magnitudes over bfloat16's range, with infinities, NaN, subnormals and values
    whose products overflow."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(N) * 10.0 ** rng.integers(-40, 39, N)
    x[:8] = [np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-39, -2e-40, 0.0]
    return x.astype(np.float32).astype(ml_dtypes.bfloat16)


@pytest.mark.gpu
def test_the_same_bits_as_the_reference():
    a, b, outs, kernel = _kernel("sm_90a")
    x, y = _data(1), _data(2)
    got = [np.zeros(N, ml_dtypes.bfloat16) for _ in outs]
    kernel(x, y, *got)
    for out, t in zip(got, outs):
        want = sl.reference(t, {a: x, b: y})
        finite = ~np.isnan(want.astype(np.float32))
        np.testing.assert_array_equal(out.view(np.uint16)[finite], want.view(np.uint16)[finite])
        assert np.isnan(out.astype(np.float32)[~finite]).all()
