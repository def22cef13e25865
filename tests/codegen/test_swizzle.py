"""Swizzled shared layouts: the permutation, the code that addresses it, and the schedule
primitive's checks.

The interpreter addresses elements, not bytes, so only compiled code can get a swizzle wrong;
a swizzle is right when every path that reaches the buffer (scalar, vector, lane by lane,
ldmatrix, cp.async) places each element where the others look for it. The CPU JIT runs the
first three here; the tensor-core paths run on the GPU (tests/cuda/test_tensor_cores.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm_fp16 as example
from schedlang.codegen.llvm.expr import swizzled
from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Buffer, For, LoweredFunc, seq
from tests.cuda.ptxas import assemble
from tests.loopir.nests import load, loop_var, store

from .util import run_cpu


@pytest.mark.parametrize("mode", [32, 64, 128])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_swizzle_permutes_whole_chunks_within_their_line(mode, dtype):
    buffer = Buffer("S", (const(16), const(64)), dtype, "shared", swizzle=mode)
    per_chunk = 16 // np.dtype(dtype).itemsize
    moved = [swizzled(buffer, k) for k in range(16 * 64)]
    assert sorted(moved) == list(range(16 * 64))  # a permutation of the buffer
    per_line = 128 // np.dtype(dtype).itemsize
    for k in range(0, 16 * 64, per_chunk):
        chunk = moved[k : k + per_chunk]
        assert chunk == list(range(chunk[0], chunk[0] + per_chunk))  # chunks stay whole
        assert chunk[0] // per_line == swizzled(buffer, k, xor=False) // per_line  # in a line


@pytest.mark.parametrize("mode", [32, 64, 128])
def test_rows_longer_than_the_swizzle_are_kept_in_panels(mode):
    """The tensor cores' layout: a panel is `mode` bytes of every row, its rows contiguous."""
    rows, cols = 8, 256
    buffer = Buffer("S", (const(2), const(rows), const(cols)), "float16", "shared", swizzle=mode)
    panel = mode // 2
    for lead in range(2):
        for r in range(rows):
            for c in range(cols):
                flat = (lead * rows + r) * cols + c
                expect = lead * rows * cols + c // panel * rows * panel + r * panel + c % panel
                assert swizzled(buffer, flat, xor=False) == expect
    moved = [swizzled(buffer, k) for k in range(2 * rows * cols)]
    assert sorted(moved) == list(range(2 * rows * cols))


def test_eight_rows_of_128_bytes_fall_in_eight_bank_groups():
    """What ldmatrix needs: rows r..r+7 at one 16-byte column, in 8 different chunks."""
    buffer = Buffer("S", (const(8), const(64)), "float16", "shared", swizzle=128)
    for column in range(0, 64, 8):
        groups = {swizzled(buffer, row * 64 + column) // 8 % 8 for row in range(8)}
        assert len(groups) == 8


def _copy_through(lanes_in: int, lanes_out: int, start: int) -> LoweredFunc:
    """out[r, c] = A[r, c] through a swizzled buffer, written `lanes_in` and read
    `lanes_out` elements at a time (vectorized loops), the columns from `start`."""
    rows, cols = 8, 64
    a = Buffer("A", (const(rows), const(cols)), "float16")
    out = Buffer("out", (const(rows), const(cols)), "float16")
    s = Buffer("S", (const(rows), const(cols)), "float16", "shared", swizzle=128)

    def nest(dst, src, lanes, name):
        r, c, v = loop_var(f"r{name}"), loop_var(f"c{name}"), loop_var(f"v{name}")
        column = start + c * lanes + v
        inner = For(
            v, const(0), const(lanes), "vectorized", store(dst, (r, column), load(src, r, column))
        )
        count = (cols - start) // lanes
        return For(
            r, const(0), const(rows), "serial", For(c, const(0), const(count), "serial", inner)
        )

    from schedlang.loopir.core.nodes import Allocate

    body = Allocate(s, seq(nest(s, a, lanes_in, "w"), nest(out, s, lanes_out, "r")))
    return LoweredFunc("main", (a, out), (), body)


@pytest.mark.parametrize(
    ("lanes_in", "lanes_out", "start"),
    [(8, 1, 0), (1, 8, 0), (8, 4, 0), (16, 8, 0), (8, 8, 4), (2, 16, 0)],
)
def test_every_access_path_agrees_on_the_layout(lanes_in, lanes_out, start):
    """Vectors within a chunk, vectors across chunks (split lane by lane), scalars."""
    func = _copy_through(lanes_in, lanes_out, start)
    a = np.random.default_rng(0).uniform(0.5, 2.0, (8, 64)).astype(np.float16)
    out = np.full((8, 64), np.nan, np.float16)
    with np.errstate(invalid="ignore"):
        run_cpu(func, [a, out])
    end = start + (64 - start) // max(lanes_in, lanes_out) * max(lanes_in, lanes_out)
    np.testing.assert_array_equal(out[:, start:end], a[:, start:end])


def test_the_gemm_with_swizzled_tiles_assembles():
    a, b, c = example.gemm(256, 256, 128, "float16", "float16")
    kernel = sl.build(example.schedule(a, b, c, layout="swizzle"), [a, b, c], target="cuda")
    assert "swizzled 128" in str(kernel.lowered)
    assert "xor.b" in kernel.ptx and "ldmatrix" in kernel.ptx and "cp.async.cg" in kernel.ptx
    report = assemble(kernel.ptx)
    assert report.stack_bytes == 0, report.log


def test_swizzle_is_checked():
    a, b, c = example.gemm(64, 64, 64)
    s = sl.create_schedule(c.op)
    cl = s.cache_write(c, "local")
    with pytest.raises(sl.ScheduleError, match="bytes must be 32, 64 or 128, got 48"):
        s[cl].swizzle(48)
    with pytest.raises(sl.ScheduleError, match="is an output"):
        s[c].swizzle(128)
    s[cl].swizzle(128)
    with pytest.raises(sl.ScheduleError, match="swizzled layouts are for shared memory"):
        sl.lower(s, [a, b, c])
    s2 = sl.create_schedule(c.op)
    cs = s2.cache_write(c, "shared")
    s2[cs].storage_align(s2[cs].op.axis[0], 32, 8)
    with pytest.raises(sl.ScheduleError, match="storage_align: one layout or the other"):
        s2[cs].swizzle(128)
