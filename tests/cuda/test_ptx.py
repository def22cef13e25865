"""The CUDA target without a GPU: every GPU-style schedule builds to PTX that ptxas accepts,
with the barriers, shared memory and registers its loop nest asks for."""

from __future__ import annotations

import re

import pytest

import schedlang as sl
from schedlang.loopir.core.nodes import Allocate, Barrier
from schedlang.loopir.core.visit import walk_stmt

from .kernels import SCHEDULES, UNARY, gemm_registers, math
from .ptxas import assemble


def build(make, *args, target: str = "cuda"):
    s, inputs, outputs = make(*args)
    return sl.build(s, inputs + outputs, target=target)


def shared_declarations(ptx: str) -> dict[str, int]:
    """``.shared`` arrays of the PTX: name -> bytes."""
    found = re.findall(r"\.shared \.align \d+ \.b8 (\S+)\[(\d+)\]", ptx)
    return {name: int(size) for name, size in found}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_assembles_with_its_barriers_and_shared_memory(name):
    kernel = build(SCHEDULES[name])
    report = assemble(kernel.ptx)
    body = kernel.lowered.body
    barriers = sum(isinstance(s, Barrier) for s in walk_stmt(body))
    shared = [s.buffer for s in walk_stmt(body) if isinstance(s, Allocate)]
    shared = [b for b in shared if b.scope == "shared"]
    assert ".target sm_90" in kernel.ptx and ".version 8.0" in kernel.ptx
    assert (barriers > 0) == ("bar.sync" in kernel.ptx)
    assert ("st.shared" in kernel.ptx) == bool(shared)
    assert ("ld.shared" in kernel.ptx) == bool(shared)
    expected = sorted(padded_bytes(b) for b in shared)
    assert sorted(shared_declarations(kernel.ptx).values()) == expected
    assert report.shared_bytes == sum(expected)
    assert report.spill_bytes == 0


def padded_bytes(buffer) -> int:
    """A float32 buffer's bytes, rounded up to the 16 bytes each shared array is aligned to."""
    count = 1
    for n in buffer.shape:
        count *= int(n)
    return -(-count * 4 // 16) * 16


def test_kernels_take_global_pointers_and_every_size():
    kernel = build(SCHEDULES["vector_add"])
    entry = kernel.ptx[kernel.ptx.index(".entry") :]
    assert entry.count(".ptr .global") == 3  # A, B, C
    assert ".maxntid 64, 1, 1" in kernel.ptx
    assert "ld.global" in kernel.ptx and "st.global" in kernel.ptx
    (config,) = kernel.launch_config
    assert config.grid == ("(n - 1) // 64 + 1", "1", "1")
    assert config.block == (64, 1, 1) and config.shared_bytes == 0


def test_register_tiles_stay_in_registers():
    kernel = build(gemm_registers)
    report = assemble(kernel.ptx)
    assert report.stack_bytes == 0 and report.spill_bytes == 0
    assert report.shared_bytes == 2 * 32 * 8 * 4
    assert "ld.local" not in kernel.ptx and "st.local" not in kernel.ptx


def test_a_temporary_between_two_kernels():
    kernel = build(SCHEDULES["two_kernels"])
    assert [c.kernel for c in kernel.launch_config] == ["main_kernel0", "main_kernel1"]
    assert kernel.ptx.count(".entry") == 2
    assemble(kernel.ptx)


def test_uniform_stores_run_on_one_thread():
    """The combining loop of the rfactor recipe runs outside the thread loop: one thread
    of each block does it (its other threads would add the partial sums again)."""
    kernel = build(SCHEDULES["row_sum_rfactor"])
    assert re.search(r"setp\.ne\.[bsu]32\s+%p\d+, %r\d+, 0;", kernel.ptx)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [*UNARY, "pow", "fma"])
def test_math_functions_assemble_with_libdevice_linked_in(name, dtype):
    kernel = build(math, name, dtype)
    assemble(kernel.ptx)
    assert ".extern" not in kernel.ptx
    assert len(kernel.ptx) < 40_000  # the unused rest of libdevice is gone


def test_no_fast_math():
    kernel = build(math, "sqrt")
    assert "sqrt.rn.f32" in kernel.ptx
    assert ".approx" not in build(SCHEDULES["vector_add"]).ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_arch_option(arch):
    kernel = build(SCHEDULES["transpose"], target=f"cuda -arch={arch}")
    assert f".target {arch}" in kernel.ptx
    assert kernel.target == f"cuda -arch={arch}"
    assemble(kernel.ptx, arch)


def test_min_blocks_per_sm_caps_registers():
    """TE's recipe asks for 147 registers; two blocks of 64 threads per multiprocessor leave
    it all 255, sixteen leave 64 (the register file is 64K words)."""
    plain = build(SCHEDULES["te_gemm_64"])
    assert ".minnctapersm" not in plain.ptx
    capped = build(SCHEDULES["te_gemm_64"], target="cuda -min-blocks-per-sm=16")
    assert ".minnctapersm 16" in capped.ptx
    assert capped.target == "cuda -arch=sm_90 -min-blocks-per-sm=16"
    assert assemble(capped.ptx).registers <= 64 < assemble(plain.ptx).registers


def test_contiguous_vector_accesses_are_16_bytes_wide():
    """A vectorized loop of 4 floats inside the thread loops, at offsets that are multiples of
    4: one ld.global.v4 and one st.global.v4 per thread (kernel buffers are 16-byte aligned)."""
    a = sl.placeholder((512, 512), name="A")
    c = sl.compute((512, 512), lambda i, j: a[i, j] * 2.0, name="C")
    s = sl.create_schedule(c)
    by, bx, ty, tx = s[c].tile(c.op.axis[0], c.op.axis[1], 8, 64)
    tx, lanes = s[c].split(tx, factor=4)
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[c].bind(axis, sl.thread_axis(tag))
    s[c].vectorize(lanes)
    ptx = sl.build(s, [a, c], target="cuda").ptx
    assemble(ptx)
    assert re.findall(r"(ld\.global\S*|st\.global\S*)", ptx) == [
        "ld.global.nc.v4.b32",
        "st.global.v4.b32",
    ]


def _vector_widths(ptx: str, space: str) -> set[str]:
    return {m or "b32" for m in re.findall(rf"(?:ld|st)\.{space}(?:\.nc)?(?:\.(v\d))?\.", ptx)}


def test_shared_tiles_are_filled_and_read_16_bytes_at_a_time():
    """TE's recipe at its own sizes: the copy into shared memory, four consecutive floats per
    thread, and the register operands read from the tiles become ``st.shared.v4`` and
    ``ld.shared.v4``; no shared access is left one word wide."""
    ptx = build(SCHEDULES["te_gemm_64"]).ptx
    assemble(ptx)
    assert _vector_widths(ptx, "shared") == {"v4"}
    assert _vector_widths(ptx, "global") == {"v4"}


def test_an_offset_that_breaks_alignment_keeps_accesses_narrow():
    """Reading ``A[i, 4*t + 1 + lane]`` (4 lanes) starts one float past a 16-byte boundary: the
    access must not be stated 16-byte aligned (a misaligned ld.v4 faults), so it is split."""
    a = sl.placeholder((64, 132), name="A")
    c = sl.compute((64, 128), lambda i, j: a[i, j + 1] * 2.0, name="C")
    s = sl.create_schedule(c)
    by, ty = s[c].split(c.op.axis[0], factor=8)
    tx, lanes = s[c].split(c.op.axis[1], factor=4)
    for axis, tag in ((by, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[c].bind(axis, sl.thread_axis(tag))
    s[c].vectorize(lanes)
    ptx = sl.build(s, [a, c], target="cuda").ptx
    assemble(ptx)
    assert re.findall(r"ld\.global\S*", ptx) and "ld.global.nc.v4" not in ptx
    assert re.findall(r"st\.global\S*", ptx) == ["st.global.v4.b32"]
