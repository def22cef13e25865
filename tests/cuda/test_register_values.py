"""Register arrays emitted as SSA values (`codegen.register_values`): which local buffers
qualify, and kernels built with them: valid LLVM IR (the build verifies it), no stack slots,
PTX that ptxas accepts."""

from __future__ import annotations

import re

import pytest

import schedlang as sl
from examples import gpu_gemm
from schedlang.codegen.llvm.register_values import promoted
from schedlang.codegen.llvm.text import module_text
from schedlang.codegen.nvptx.module import build_module
from schedlang.codegen.nvptx.plan import plan_kernels
from schedlang.demo_cuda import te_gpu_gemm
from schedlang.ir.expr import CommReducer, Var, const
from schedlang.loopir.core.nodes import (
    Allocate,
    Buffer,
    For,
    If,
    Load,
    LoweredFunc,
    Seq,
    Store,
    ThreadAllReduce,
)
from tests.schedule.test_gpu_schedules import gemm_shared_local, matmul

from .ptxas import assemble

ACC = Buffer("acc", (const(8),), "float32", "local")
OUT = Buffer("out", (const(8),), "float32")
ZERO = const(0.0, "float32")


def loop(name: str, extent: int, kind: str, body, thread: str | None = None) -> For:
    var = Var(name, "int32", "loop")
    return For(var, const(0), const(extent), kind, body(var), thread)


def kept_in_values(body) -> bool:
    return id(ACC) in promoted(Allocate(ACC, body))


def test_constant_elements_qualify():
    body = Seq(
        (Store(ACC, (const(3),), ZERO), Store(OUT, (const(0),), Load(ACC, (const(3),), "float32")))
    )
    assert kept_in_values(body)


def test_an_element_chosen_by_a_thread_does_not():
    body = loop("t", 8, "bound", lambda t: Store(ACC, (t,), ZERO), "threadIdx.x")
    assert not kept_in_values(body)


def test_a_contiguous_run_of_lanes_qualifies():
    body = loop("v", 4, "vectorized", lambda v: Store(OUT, (v,), Load(ACC, (v + 4,), "float32")))
    assert kept_in_values(body)


def test_a_run_past_the_end_does_not():
    body = loop("v", 4, "vectorized", lambda v: Store(OUT, (v,), Load(ACC, (v + 6,), "float32")))
    assert not kept_in_values(body)


def test_lanes_under_a_mask_do_not():
    def body(v):
        return If(v < 2, Store(ACC, (v,), ZERO))

    assert not kept_in_values(loop("v", 4, "vectorized", body))


def test_reads_in_a_short_counted_loop_qualify_but_writes_do_not():
    read = loop("j", 4, "serial", lambda j: Store(OUT, (j,), Load(ACC, (j * 2,), "float32")))
    write = loop("j", 4, "serial", lambda j: Store(ACC, (j,), ZERO))
    assert kept_in_values(read)
    assert not kept_in_values(write)


def test_a_run_of_lanes_in_a_short_counted_loop_qualifies_where_it_is_fixed():
    """A vector store inside a counted loop (a row of values loaded each step) names the same
    elements at every iteration: kept in values. One that moves with the loop is not."""
    fixed = loop(
        "j", 4, "serial", lambda j: loop("v", 4, "vectorized", lambda v: Store(ACC, (v,), ZERO))
    )
    moving = loop(
        "j",
        2,
        "serial",
        lambda j: loop("v", 4, "vectorized", lambda v: Store(ACC, (j * 4 + v,), ZERO)),
    )
    assert kept_in_values(fixed)
    assert not kept_in_values(moving)


def test_a_counted_loop_of_no_iterations_names_no_element():
    """Read at an element of its variable, it is no table (there is no last element to fall
    back on), so the array stays in memory and the kernel compiles."""
    reads = loop("j", 0, "serial", lambda j: Store(OUT, (j,), Load(ACC, (j,), "float32")))
    body = Seq((Store(ACC, (const(0),), ZERO), reads))
    assert not kept_in_values(body)
    kernel = For(
        Var("bx", "int32", "loop"), const(0), const(1), "bound", Allocate(ACC, body), "blockIdx.x"
    )
    plan = plan_kernels(LoweredFunc("empty_table", (OUT,), (), kernel))
    assert "define" in module_text(build_module(plan, "sm_90", ""))


def test_a_block_collective_keeps_memory():
    lhs, rhs = Var("x", "float32"), Var("y", "float32")
    add = CommReducer("sum", lhs, rhs, lhs + rhs, ZERO)
    body = ThreadAllReduce((add,), (ACC,), (OUT,), ("threadIdx.x",))
    assert not kept_in_values(body)


def stack_slots(llvm_ir: str) -> list[int]:
    return [int(n) for n in re.findall(r"= alloca float, i32 (\d+)", llvm_ir)]


@pytest.mark.parametrize("sizes", [(64, 64, 64), (61, 53, 37)])
def test_gemm_kernels(sizes):
    """Divisible sizes: every register tile in SSA values. Odd ones: guards and loops of
    unknown trip counts around the tiles (some stay in memory); either way LLVM's verifier and
    ptxas accept the kernel."""
    small_te = lambda *t: te_gpu_gemm(*t, num_thread=4, scale=2, vt=2, kf=4)  # noqa: E731
    for make in (gemm_shared_local, small_te):
        a, b, c = matmul(*sizes)
        s = sl.create_schedule(c)
        make(s, a, b, c)
        kernel = sl.build(s, [a, b, c], target="cuda -arch=sm_90")
        report = assemble(kernel.ptx)
        if sizes == (64, 64, 64):
            assert stack_slots(kernel.llvm_ir) == []
            assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log


def test_example_gemm_at_a_ragged_size():
    """The whole-tile split gives the boundary tiles their own copy of the stores, which read
    the accumulators in a loop over vector lanes that runs as a counted loop; only the next
    tile's masked copies (4 floats each) stay in memory."""
    kernel = gpu_gemm.build(999, 999, 999, target="cuda -arch=sm_90 -min-blocks-per-sm=2")
    assert set(stack_slots(kernel.llvm_ir)) == {4}
    assemble(kernel.ptx)
