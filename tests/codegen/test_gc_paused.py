"""`sl.build` and `sl.lower` hold Python's garbage collector while they compile, and leave it
as they found it."""

from __future__ import annotations

import gc

import pytest

import schedlang as sl
from schedlang.collector import paused
from schedlang.ir.expr import Cast, Var, const
from schedlang.loopir.core.nodes import Buffer, For, Store
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.visit import substitute_stmt


def _schedule():
    a = sl.placeholder((7, 5), name="A")
    b = sl.compute((7, 5), lambda i, j: a[i, j] * 2.0, name="B")
    return sl.create_schedule(b), [a, b]


@pytest.fixture
def collector_enabled():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_nests_and_restores(collector_enabled):
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer compile is still under way
    assert gc.isenabled()


def test_paused_restores_after_an_error(collector_enabled):
    with pytest.raises(ValueError), paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(collector_enabled):
    gc.disable()
    s, args = _schedule()
    sl.build(s, args)
    assert not gc.isenabled()


def test_build_and_lower_restore_the_collector(collector_enabled):
    s, args = _schedule()
    sl.lower(s, args)
    sl.build(s, args)
    assert gc.isenabled()


@pytest.fixture
def garbage_kept():
    """What the collector finds unreachable in the block, kept for the test to read."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    yield gc.garbage
    gc.set_debug(0)
    gc.garbage.clear()


def test_a_loop_ir_rewrite_leaves_no_cycle(garbage_kept):
    """A rewrite's memo holds every node it made; left in a reference cycle, it waited for the
    collector, which then walked it after the build (tens of thousands of nodes on an
    attention kernel)."""
    i = Var("i", "int32", "loop")
    out = Buffer("Out", (const(8),), "float32")
    loop = For(i, const(0), const(8), "serial", Store(out, (i,), Cast("float32", i * 2)))
    rewritten = substitute_stmt(loop, {i: i + 1})
    assert "Out[i + 1]" in stmt_str(rewritten)
    gc.collect()
    assert garbage_kept == []


def test_llvm_instructions_are_freed_with_the_text(garbage_kept):
    """`module_text` leaves no instruction in a cycle (a block and its terminator, a loop's
    phi and its increment): the collector has none of them to walk after a build."""
    s, args = _schedule()
    s[args[1]].split(s[args[1]].op.axis[0], factor=2)
    sl.build(s, args)  # a loop with its phi, branches, blocks
    gc.collect()
    left = {type(o).__name__ for o in garbage_kept if type(o).__module__.startswith("llvmlite")}
    assert not left & {"Instruction", "PhiInstr", "Branch", "ConditionalBranch", "Block"}
