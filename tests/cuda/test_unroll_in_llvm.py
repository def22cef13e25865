"""Loops marked unrolled that the cuda target leaves to LLVM (`registers.left_to_llvm`): which
ones stay loops in the loop IR, that the code generator asks LLVM to unroll them completely,
and that the PTX then holds the same fully unrolled code as when the loop IR unrolled them."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

import schedlang as sl
from examples import gpu_gemm
from schedlang.codegen.llvm.control import for_range
from schedlang.codegen.nvptx.compile import _unroll_hinted_loops, machine
from schedlang.ir.expr import Var, binary, const
from schedlang.loopir.core.nodes import Allocate, Buffer, For, If, Let, Load, Store
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.interpret import run
from schedlang.loopir.loops.unroll import unroll_loops
from schedlang.loopir.memory.registers import left_to_llvm
from schedlang.platform_info import NVPTX_TRIPLE
from tests.schedule.util import random_inputs

from . import kernels
from .ptxas import assemble

LOCAL = Buffer("acc", (const(8),), "float32", "local")
SHARED = Buffer("tile", (const(8), const(8)), "float32", "shared")
OUT = Buffer("out", (const(8),), "float32")
ONE = const(1.0, "float32")


def unrolled(body) -> For:
    k = Var("k", "int32", "loop")
    return For(k, const(0), const(8), "unrolled", body(k))


def test_a_loop_reading_shared_memory_at_its_variable_is_left_to_llvm():
    loop = unrolled(
        lambda k: Store(
            LOCAL,
            (const(2),),
            binary(
                "+", Load(LOCAL, (const(2),), "float32"), Load(SHARED, (k, const(3)), "float32")
            ),
        )
    )
    assert left_to_llvm(loop)


def test_a_loop_whose_variable_names_a_register_is_unrolled_here():
    assert not left_to_llvm(unrolled(lambda k: Store(LOCAL, (k,), ONE)))
    assert not left_to_llvm(unrolled(lambda k: Store(OUT, (k,), Load(LOCAL, (k,), "float32"))))


def test_a_register_index_computed_from_the_variable_counts():
    def body(k):
        j = Var("j", "int32", "let")
        return Let(j, binary("+", k, const(1)), Store(LOCAL, (binary("%", j, const(8)),), ONE))

    assert not left_to_llvm(unrolled(body))


def test_a_loop_bounding_an_inner_loop_or_guarding_is_unrolled_here():
    def inner(k):
        i = Var("i", "int32", "loop")
        return For(i, const(0), binary("+", k, const(1)), "serial", Store(OUT, (i,), ONE))

    assert not left_to_llvm(unrolled(inner))
    guarded = unrolled(lambda k: If(binary("<", k, const(5)), Store(OUT, (k,), ONE)))
    assert not left_to_llvm(guarded)


def test_a_loop_of_unknown_extent_is_never_kept():
    k = Var("k", "int32", "loop")
    n = Var("n", "int32", "size")
    assert not left_to_llvm(For(k, const(0), n, "unrolled", Store(OUT, (k,), ONE)))


def test_unroll_loops_keeps_what_it_is_told_to_and_unrolls_inside():
    def body(k):
        i = Var("i", "int32", "loop")
        update = Store(
            LOCAL, (i,), binary("+", Load(LOCAL, (i,), "float32"), Load(SHARED, (k, i), "float32"))
        )
        return For(i, const(0), const(8), "unrolled", update)

    out = unroll_loops(Allocate(LOCAL, unrolled(body)), keep=left_to_llvm)
    loops = [s for s in walk_stmt(out) if isinstance(s, For)]
    assert [(s.var.name, s.kind) for s in loops] == [("k", "unrolled")]
    stores = [s for s in walk_stmt(out) if isinstance(s, Store)]
    assert [s.indices for s in stores] == [(const(i),) for i in range(8)]
    assert not [s for s in walk_stmt(unroll_loops(unrolled(body))) if isinstance(s, For)]


def kept_loops(kernel) -> list[str]:
    return [
        s.var.name
        for s in walk_stmt(kernel.lowered.body)
        if isinstance(s, For) and s.kind == "unrolled"
    ]


def gemm(n: int):
    return gpu_gemm.build(n, n, n, target="cuda -arch=sm_90 -min-blocks-per-sm=2")


def test_the_gemm_k_loop_reaches_llvm_as_a_loop_and_leaves_it_unrolled():
    kernel = gemm(256)
    assert kept_loops(kernel) == ["k.inner"]
    hint = re.search(r"!llvm\.loop (![0-9]+)", kernel.llvm_ir)
    assert hint is not None
    node = re.search(
        rf"^{hint.group(1)} = !{{ {hint.group(1)}, (![0-9]+) }}$", kernel.llvm_ir, re.M
    )
    assert node is not None, "the loop's metadata does not name itself"
    assert re.search(rf'^{node.group(1)} = !{{ !"llvm.loop.unroll.full" }}$', kernel.llvm_ir, re.M)
    # 8 steps of k by 64 multiply-adds: all in the PTX, with no loop around them
    assert kernel.ptx.count("fma.rn.f32") == 512
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0


def test_each_hinted_loop_names_itself_and_is_unrolled_before_o3():
    module = ir.Module("m")
    module.triple = NVPTX_TRIPLE
    f = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), "kernel")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    i64 = ir.IntType(64)
    for _ in range(2):
        with for_range(b, ir.Constant(i64, 0), ir.Constant(i64, 4), "k", unroll=True) as k:
            slot = b.gep(f.args[0], [k], source_etype=ir.FloatType())
            b.store(
                b.fadd(b.load(slot, typ=ir.FloatType()), ir.Constant(ir.FloatType(), 1.0)), slot
            )
    b.ret_void()
    text = str(module)
    ids = re.findall(r"!llvm\.loop (![0-9]+)", text)
    assert len(ids) == 2 and ids[0] != ids[1]
    for loop_id in ids:
        assert re.search(rf"^{loop_id} = !{{ {loop_id}, ![0-9]+ }}$", text, re.M), text
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    _unroll_hinted_loops(parsed, machine("sm_90"))  # alone, before -O3 would run
    unrolled_ir = str(parsed)
    assert "!llvm.loop" not in unrolled_ir
    # each header entered once (from before its loop): no back edge is left
    assert len(re.findall(r"br label %k\.head", unrolled_ir)) == 2


def test_kept_loops_compute_what_the_reference_does():
    s, inputs, outputs = kernels.te_gemm_64(72)  # partial block tiles, whole k steps
    kernel = sl.build(s, [*inputs, *outputs], target="cuda")
    assert kept_loops(kernel), "no loop was left to LLVM"
    values = random_inputs(inputs, {}, seed=11)
    (want,) = [sl.evaluate(t, values) for t in outputs]
    got = np.full(want.shape, np.nan, np.float32)
    run(kernel.lowered, [values[p] for p in inputs] + [got])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assemble(kernel.ptx)
