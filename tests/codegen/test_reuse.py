"""Integer arithmetic emitted once where its first copy dominates (`codegen.llvm.reuse`): reused
in the arms and the loop bodies entered after it, recomputed where the first copy sits in an
arm that does not dominate (the other arm, the code after the branch)."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from schedlang.codegen.llvm.control import if_then
from schedlang.codegen.llvm.reuse import Reuse
from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import Allocate, Buffer, For, If, Load, LoweredFunc, Store, seq
from schedlang.runtime.kernel import Kernel

F32 = "float32"


def _read(buffer: Buffer, index) -> Load:
    return Load(buffer, (index,), F32)


def _kernel() -> tuple[Kernel, int]:
    """For each i < n: B[i] = A[3i % 7]; C[i] = A[3i % 7] (i < 10) or A[5i % 7]; then
    D[i] = A[5i % 9] in either arm of i < 5, and E[i] = A[5i % 9] after them."""
    n = 19
    a = Buffer("A", (const(9),), F32)
    b, c, d, e = (Buffer(name, (const(n),), F32) for name in "BCDE")
    i = Var("i", "int32", "loop")
    before, other, late = (i * 3) % 7, (i * 5) % 7, (i * 5) % 9
    body = seq(
        Store(b, (i,), _read(a, before)),
        If(i < 10, Store(c, (i,), _read(a, before)), Store(c, (i,), _read(a, other))),
        If(i < 5, Store(d, (i,), _read(a, late)), Store(d, (i,), _read(a, late) + 1.0)),
        Store(e, (i,), _read(a, late)),
    )
    nest = For(i, const(0), const(n), "serial", body)
    return Kernel.for_cpu(LoweredFunc("main", (a, b, c, d, e), (), nest)), n


def test_reused_where_it_dominates_and_recomputed_where_it_does_not():
    kernel, n = _kernel()
    text = kernel.llvm_ir
    assert len(re.findall(r"= urem i64 [^\n]*, 7\n", text)) == 2  # 3i % 7 once, 5i % 7 once
    assert len(re.findall(r"= urem i64 [^\n]*, 9\n", text)) == 3  # per arm, and after them
    rng = np.random.default_rng(0)
    a = rng.uniform(1.0, 2.0, 9).astype(np.float32)
    outs = [np.full(n, np.nan, np.float32) for _ in range(4)]
    kernel(a, *outs)
    i = np.arange(n)
    np.testing.assert_array_equal(outs[0], a[3 * i % 7])
    np.testing.assert_array_equal(outs[1], np.where(i < 10, a[3 * i % 7], a[5 * i % 7]))
    np.testing.assert_array_equal(outs[2], np.where(i < 5, a[5 * i % 9], a[5 * i % 9] + 1))
    np.testing.assert_array_equal(outs[3], a[5 * i % 9])


def _squaring():
    """``(function, builder, flag, reuse, twice)``: a function of an i64 x and an i1 flag, and
    ``twice()``, which emits ``x * x`` through `reuse` (or reuses it)."""
    i64 = ir.IntType(64)
    fn = ir.Function(ir.Module(), ir.FunctionType(i64, [i64, ir.IntType(1)]), "f")
    b = ir.IRBuilder(fn.append_basic_block("start"))
    x, flag = fn.args
    reuse = Reuse(b)

    def twice() -> ir.Value:
        return reuse.value(("*", id(x)), lambda: b.mul(x, x), x)

    return fn, b, flag, reuse, twice


def test_not_reused_after_a_branch_made_by_other_code():
    """A construct of the translator's inside an arm of a branch it did not make (a target's
    clipped stores): the block it began in dominates that arm only, so a value computed there
    is computed again after the branch, and the function is valid IR."""
    fn, b, flag, reuse, twice = _squaring()
    with b.if_else(flag) as (then, otherwise):  # not the translator's
        with then:
            pass
        with otherwise:
            first = twice()
            pre = b.block
            with if_then(b, flag), reuse.dominated(pre):
                assert twice() is first  # the arm's block dominates the nested construct
            reuse.follows(pre)
    after = twice()
    assert after is not first
    b.ret(after)
    llvm.parse_assembly(str(fn.module)).verify()


def test_reused_after_the_translators_own_branch():
    fn, b, flag, reuse, twice = _squaring()
    first, pre = twice(), b.block
    with if_then(b, flag), reuse.dominated(pre):
        assert twice() is first
    reuse.follows(pre)
    assert twice() is first
    b.ret(first)
    llvm.parse_assembly(str(fn.module)).verify()


def test_a_stack_slots_elements_are_addressed_once_in_the_entry_block():
    """A local buffer's elements at constant indices, read under guards of their own (as an
    unrolled register tile is): each address is made once, where every read sees it."""
    n = 7
    a, b = Buffer("A", (const(n),), F32), Buffer("B", (const(n),), F32)
    tile = Buffer("T", (const(4),), F32, "local")
    i = Var("i", "int32", "loop")
    body = seq(
        Store(tile, (const(2),), _read(a, i)),
        If(
            i < 3,
            Store(b, (i,), _read(tile, const(2))),
            Store(b, (i,), _read(tile, const(2)) * 2.0),
        ),
    )
    nest = For(i, const(0), const(n), "serial", Allocate(tile, body))
    kernel = Kernel.for_cpu(LoweredFunc("main", (a, b), (), nest))
    entry = kernel.llvm_ir.split("entry:")[1].split("start:")[0]
    assert (
        len(re.findall(r"getelementptr inbounds float, ptr %[^,]*, i64 2\n", kernel.llvm_ir)) == 1
    )
    assert "i64 2\n" in entry
    rng = np.random.default_rng(1)
    a_np = rng.uniform(1.0, 2.0, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel(a_np, out)
    np.testing.assert_array_equal(out, np.where(np.arange(n) < 3, a_np, a_np * 2))
