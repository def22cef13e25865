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
    data = BYTES[: ROWS * columns].reshape(ROWS, columns)
    return _built(s, packed, out, data, target, r, "blockIdx.x", outer)


def _built(s, packed, out, data, target: str, rows, tag: str, columns):
    """``(packed, out, data, kernel)``: `s` built for `target`, on the GPU with `rows` bound
    to `tag` and `columns` to the threads."""
    if target.startswith("cuda"):
        s[out].bind(rows, sl.thread_axis(tag))
        s[out].bind(columns, sl.thread_axis("threadIdx.x"))
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
    data = BYTES[: ROWS * 64].reshape(ROWS, 64)
    return _built(s, packed, out, data, target, r, "threadIdx.y", outer)


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


def _two_fields(first: int, step: int, mask: int, target: str):
    """``Q[r, j, l] = bfloat16((int32(P[r, j]) >> (first + step * l)) & mask)``, the pair l
    vectorized: one byte, a field per lane (a byte's two nibbles, a fragment's register)."""
    packed = sl.placeholder((ROWS, 32), "uint8", name="P")
    out = sl.compute(
        (ROWS, 32, 2),
        lambda r, j, lane: (
            (packed[r, j].astype("int32") >> (first + step * lane)) & mask
        ).astype("bfloat16"),
        name="Q",
    )
    s = sl.create_schedule(out)
    r, j, lane = out.op.axis
    s[out].vectorize(lane)
    data = BYTES[: ROWS * 32].reshape(ROWS, 32)
    return _built(s, packed, out, data, target, r, "blockIdx.x", j)


TWO_FIELDS = [(0, 4, 15), (1, 3, 7), (4, -4, 15), (2, 3, 7), (0, 7, 1)]


@pytest.mark.parametrize(("first", "step", "mask"), [*TWO_FIELDS, (0, 4, 31), (1, 6, 3)])
def test_two_fields_of_one_byte_are_exact_on_the_cpu(first, step, mask):
    """Taken (the first five) or not (a field past its byte: the general code): exact."""
    want = _exact(_two_fields(first, step, mask, "cpu"))
    data = BYTES[: ROWS * 32].reshape(ROWS, 32).astype(np.int64)
    for lane in range(2):
        np.testing.assert_array_equal(want[..., lane], (data >> (first + step * lane)) & mask)


@pytest.mark.parametrize(("first", "step", "mask"), TWO_FIELDS)
def test_two_fields_of_one_byte_take_a_shift_and_add_and_one_logic_instruction(first, step, mask):
    """The byte beside itself moved up (one multiply-add or shift), then one ``lop3`` keeping
    both fields and setting both bias bytes; one bfloat16x2 subtraction of the bias."""
    kernel = _two_fields(first, step, mask, "cuda -arch=sm_90")[3]
    assemble(kernel.ptx)
    body = kernel.ptx.split(".entry")[1]
    keep = mask << 16 | mask
    constants = re.findall(r"mov\.b32\s+(%r\d+), (\d+);", body)
    names = {int(value): name for name, value in constants}
    assert keep in names and 0x43004300 in names, body  # operands ptxas keeps or folds
    lop3 = rf"lop3\.b32 %r\d+, %r\d+, {names[keep]}, {names[0x43004300]}, 0xEA;"
    assert re.search(lop3, body), body
    assert body.count("lop3.b32") == 1 and body.count("sub.rn.bf16x2") == 1
    assert "prmt" not in body and "bfe.u32" not in body and "cvt.rn" not in body


@pytest.mark.gpu
@pytest.mark.parametrize(("first", "step", "mask"), TWO_FIELDS)
def test_two_fields_of_one_byte_are_exact_on_the_gpu(first, step, mask):
    _exact(_two_fields(first, step, mask, "cuda"))
