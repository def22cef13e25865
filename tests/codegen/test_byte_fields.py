"""A bit field of a vector of bytes made bfloat16 two lanes a word (`codegen.llvm.byte_fields`):
``((int32(x) >> s) & m).astype("bfloat16")`` over a vectorized loop of bytes, exact on the CPU
(the same LLVM code, JIT-compiled) for every byte, every shift the path takes and masks up to
its limit, and in PTX a permute and a mask per two lanes; fields it does not take (a mask
reaching past the byte, a shift that varies by lane) keep the general code and are exact too."""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from tests.cuda.ptxas import assemble

ROWS = 8
BYTES = np.random.default_rng(11).permutation(np.tile(np.arange(256, dtype=np.uint8), ROWS))


def _field(shift: int, mask: int, lanes: int, target: str):
    """``Q[r, j] = bfloat16((int32(P[r, j]) >> shift) & mask)``, j vectorized by `lanes`
    (the rows bound to threads on the GPU)."""
    columns = 256 // lanes * lanes
    packed = sl.placeholder((ROWS, columns), "uint8", name="P")
    out = sl.compute(
        (ROWS, columns),
        lambda r, j: ((packed[r, j].astype("int32") >> shift) & mask).astype("bfloat16"),
        name="Q",
    )
    s = sl.create_schedule(out)
    r, j = out.op.axis
    outer, inner = s[out].split(j, factor=lanes)
    s[out].vectorize(inner)
    if target.startswith("cuda"):
        s[out].bind(r, sl.thread_axis("blockIdx.x"))
        s[out].bind(outer, sl.thread_axis("threadIdx.x"))
    data = BYTES[: ROWS * columns].reshape(ROWS, columns)
    return packed, out, data, sl.build(s, [packed, out], target=target)


@pytest.mark.parametrize(
    ("shift", "mask"), [(0, 15), (4, 15), (0, 127), (1, 127), (3, 31), (7, 1), (4, 255), (0, 255)]
)
@pytest.mark.parametrize("lanes", [2, 3, 4, 8])
def test_a_field_of_bytes_is_exact_on_the_cpu(shift, mask, lanes):
    want = _exact(_field(shift, mask, lanes, "cpu"))
    data = BYTES[: want.size].reshape(want.shape)
    np.testing.assert_array_equal(want.astype(np.int64), (data.astype(np.int64) >> shift) & mask)


def _exact(built) -> np.ndarray:
    """The reference's output for `built` (its placeholder, output, data and kernel), which
    the kernel, run on the data with its output poisoned, matches bit for bit."""
    packed, out, data, kernel = built
    want = sl.evaluate(out, {packed: data})
    got = np.full(want.shape, np.nan).astype(want.dtype)
    kernel(data, got)
    np.testing.assert_array_equal(got, want)
    return want


def _body(shift: int, mask: int, lanes: int) -> str:
    kernel = _field(shift, mask, lanes, "cuda -arch=sm_90")[3]
    assemble(kernel.ptx)
    return kernel.ptx.split(".entry")[1]


@pytest.mark.parametrize(("shift", "mask"), [(0, 15), (4, 15), (3, 31)])
def test_a_field_of_bytes_takes_a_permute_and_a_mask_per_two_lanes(shift, mask):
    """Four bytes: two permutes beside the bias byte 0x43 (67), two ``and`` keeping the bias
    and the field, a shift of the whole word where the field is not at its bottom, no lane
    extracted alone (``bfe``, a 16-bit ``or``) and no conversion."""
    body = _body(shift, mask, 4)
    keep = 0x4300 | mask
    assert len(re.findall(r"prmt\.b32\s+%r\d+, 67, %r\d+, 0x[57]0[46]U;", body)) == 2, body
    assert len(re.findall(rf"and\.b32\s+%r\d+, %r\d+, {keep << 16 | keep};", body)) == 2, body
    assert ("shr.u32" in body) == bool(shift)
    assert "bfe.u32" not in body and "or.b16" not in body and "cvt.rn" not in body
    assert body.count("sub.rn.bf16x2") == 2 and "sub.rn.bf16 " not in body


def test_a_field_past_its_byte_keeps_the_lane_by_lane_code():
    """``(x >> 4) & 255`` reaches the next byte's bits in a word: not taken (the general
    code, lane by lane), and exact on the CPU above."""
    body = _body(4, 255, 4)
    assert "prmt.b32" not in body or ", 67, " not in body


def _rows_of_nibbles(target: str):
    """``Q[r, j] = bfloat16(unpack_int4(P[r // 2, j], r % 2))``, j vectorized by 8 and r a
    loop left rolled (bound to threads on the GPU): the shift ``4 * (r % 2)`` is no constant
    but the same for every lane and at most 4."""
    packed = sl.placeholder((ROWS, 64), "uint8", name="P")
    out = sl.compute(
        (2 * ROWS, 64),
        lambda r, j: sl.unpack_int4(packed[r // 2, j], r % 2).astype("bfloat16"),
        name="Q",
    )
    s = sl.create_schedule(out)
    r, j = out.op.axis
    outer, inner = s[out].split(j, factor=8)
    s[out].vectorize(inner)
    if target.startswith("cuda"):
        s[out].bind(r, sl.thread_axis("threadIdx.y"))
        s[out].bind(outer, sl.thread_axis("threadIdx.x"))
    data = BYTES[: ROWS * 64].reshape(ROWS, 64)
    return packed, out, data, sl.build(s, [packed, out], target=target)


def test_a_row_s_nibble_shifts_the_word_by_an_amount_known_only_at_run_time():
    _exact(_rows_of_nibbles("cpu"))
    body = _rows_of_nibbles("cuda -arch=sm_90")[3].ptx.split(".entry")[1]
    assert len(re.findall(r"prmt\.b32\s+%r\d+, 67, %r\d+, 0x[57]0[46]U;", body)) == 4, body
    assert re.search(r"shr\.u64\s+%rd\d+, %rd\d+, %r\d+;", body), body  # 8 bytes at once
    assert "bfe.u32" not in body and "cvt.rn" not in body


@pytest.mark.gpu
@pytest.mark.parametrize(("shift", "mask"), [(0, 15), (4, 15), (1, 127), (7, 1), (4, 255)])
@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_a_field_of_bytes_is_exact_on_the_gpu(shift, mask, lanes):
    _exact(_field(shift, mask, lanes, "cuda"))


@pytest.mark.gpu
def test_a_row_s_nibble_shifted_at_run_time_is_exact_on_the_gpu():
    _exact(_rows_of_nibbles("cuda"))
