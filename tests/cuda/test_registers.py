"""Local buffers stay in registers on the GPU without the schedule unrolling anything."""

from __future__ import annotations

import schedlang as sl
from schedlang.demo_cuda import te_gpu_gemm
from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import Buffer, For, Load, Store
from schedlang.loopir.memory.registers import MAX_COPIES, mark_register_loops
from tests.schedule.test_gpu_schedules import gemm_shared_local, matmul

from .ptxas import assemble


def test_loops_indexing_local_buffers_are_marked():
    i, j = Var("i", "int32", "loop"), Var("j", "int32", "loop")
    acc = Buffer("acc", (const(4),), "float32", "local")
    out = Buffer("out", (const(4),), "float32")
    inner = For(i, const(0), const(4), "serial", Store(acc, (i,), const(0.0, "float32")))
    other = For(
        j, const(0), const(4), "serial", Store(out, (j,), Load(acc, (const(0),), "float32"))
    )
    marked = mark_register_loops(For(j, const(0), const(1000), "serial", inner))
    assert marked.kind == "serial" and marked.body.kind == "unrolled"
    assert mark_register_loops(other) is other  # j indexes a global buffer only


def test_copies_are_bounded():
    k = Var("k", "int32", "loop")
    acc = Buffer("acc", (const(1024),), "float32", "local")
    loop = For(
        k, const(0), const(MAX_COPIES * 2), "serial", Store(acc, (k,), const(0.0, "float32"))
    )
    assert mark_register_loops(loop) is loop


def test_gemm_register_tiles_do_not_spill():
    """The shared/local GEMM and TE's recipe, with no unroll in their schedules."""
    small_te = lambda *t: te_gpu_gemm(*t, num_thread=4, scale=2, vt=2, kf=4)  # noqa: E731
    for make in (gemm_shared_local, small_te):
        a, b, c = matmul(64, 64, 64)
        s = sl.create_schedule(c)
        make(s, a, b, c)
        kernel = sl.build(s, [a, b, c], target="cuda")
        report = assemble(kernel.ptx)
        assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log
