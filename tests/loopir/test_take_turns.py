"""Consumer warpgroups taking turns at the tensor cores (`gpu.take_turns`): where a turn is
taken and given, that every warpgroup takes as many as it gives, and the kernels refused."""

from __future__ import annotations

import pytest

from schedlang.errors import LoweringError
from schedlang.ir.expr import Compare, Var, const
from schedlang.loopir.core.nodes import (
    Barrier,
    Buffer,
    For,
    If,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    Tile,
    Turn,
)
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.gpu.register_handover import hand_over_registers
from schedlang.loopir.gpu.take_turns import take_turns
from schedlang.loopir.memory.bulk_pipeline import CONSUMER, PRODUCER

BLOCK = (32, 4, 3)  # two consumer warpgroups and a producer's
WHAT = "pragma(j, 'take_turns') of stage 'M'"
FULL = Buffer("full", (const(2),), "int64", "shared")
Q = Buffer("Q", (const(64), const(64)), "float16", "shared", swizzle=128)
S = Buffer("S", (const(64), const(64)), "float32", "wgmma.accumulator")
O = Buffer("O", (const(64), const(64)), "float32", "wgmma.accumulator")
P = Buffer("P", (const(64), const(64)), "float16", "wgmma.accumulator")
ROW = Buffer("row", (const(1),), "float32", "local")
J = Var("j", "int32", "axis")


def _product(dst: Buffer, a: Buffer) -> MatrixOp:
    def tile(b: Buffer) -> Tile:
        return Tile(b, (const(0), const(0)), (0, 1), (64, 64))

    return MatrixOp("mma", tile(dst), (tile(a), tile(Q)))


def _softmax() -> Stmt:
    """Reads the scores (so a turn ends before it) and writes the probabilities."""
    read = Store(ROW, (const(0),), Load(S, (const(0),), "float32"))
    return Seq((read, Store(P, (const(0),), const(1.0, "float16"))))


def _kernel(step: Stmt, z: Var) -> Stmt:
    """Two consumer warpgroups running `step` (of their warpgroup `z`) beside a producer."""
    pz = Var("threadIdx.z.producer", "int32", PRODUCER)
    k = Var("k.producer", "int32", "axis")
    copies = For(k, const(0), const(8), "serial", MBarrier("arrive", FULL, k % 2, 128))
    producer = For(pz, const(0), const(3), "bound", If(Compare("==", pz, const(2)), copies))
    consumers = For(z, const(0), const(2), "bound", step, "threadIdx.z")
    parted, registers = hand_over_registers(Seq((Barrier(), producer, consumers)), BLOCK)
    assert registers == 240
    return parted


def _turns(s: Stmt) -> list[Turn]:
    return [n for n in walk_stmt(s) if isinstance(n, Turn)]


def test_a_turn_holds_a_run_of_products_up_to_what_reads_them():
    z = Var("threadIdx.z.consumer", "int32", CONSUMER)
    wait = MBarrier("wait", FULL, J % 2, parity=J // 2 % 2)
    rescale = Store(ROW, (const(0),), const(2.0, "float32"))  # registers no product writes
    step = Seq((wait, _product(S, Q), rescale, _product(O, P), _softmax()))
    turned = take_turns(_kernel(For(J, const(0), const(8), "serial", step), z), WHAT)
    text = stmt_str(turned)
    consumers = text.split("set_registers(240, more)")[1]
    lines = [x.strip() for x in consumers.splitlines()]
    take = lines.index("turn(take, of 2 warpgroups)")
    # the memory barrier's wait before the turn, the rescale inside it, the softmax after it
    assert "mbarrier_wait" in lines[take - 1]
    assert lines[take + 1].startswith("S[") and lines[take + 2].startswith("row[")
    assert lines[take + 3].startswith("O[")
    assert lines[take + 4] == "turn(give, of 2 warpgroups)"
    assert lines[take + 5].startswith("row[0] = S")
    # the last warpgroup gives the first turn before the loop, the first takes the last after
    assert lines[1:3] == ["if threadIdx.z.role == 1:", "turn(give, of 2 warpgroups)"]
    assert lines[-2:] == ["if threadIdx.z.role == 0:", "turn(take, of 2 warpgroups)"]
    turns = _turns(turned)
    assert sum(t.give for t in turns) == sum(not t.give for t in turns) == 2
    assert "turn(" not in text.split("set_registers(240, more)")[0]  # not the producer's


def test_a_run_ends_at_a_barrier_the_other_warpgroup_must_reach():
    z = Var("threadIdx.z.consumer", "int32", CONSUMER)
    step = Seq((_product(S, Q), Barrier(among=256), _product(O, P)))
    turned = take_turns(_kernel(For(J, const(0), const(8), "serial", step), z), WHAT)
    lines = [x.strip() for x in stmt_str(turned).split("set_registers(240, more)")[1].splitlines()]
    at = lines.index("barrier(first 256 threads)")
    assert lines[at - 1] == "turn(give, of 2 warpgroups)"
    assert lines[at + 1] == "turn(take, of 2 warpgroups)"


def test_a_warpgroup_left_out_of_an_edge_block_takes_no_turns_there():
    """A test on the warpgroup's index (an edge block whose rows leave the second warpgroup
    nothing) would have one warpgroup wait for turns the other never gives: its turns are
    taken only where every warpgroup takes the same side."""
    z = Var("threadIdx.z.consumer", "int32", CONSUMER)
    rows = Var("rows", "int32", "size")
    step = For(J, const(0), const(8), "serial", Seq((_product(S, Q), _softmax())))
    turned = take_turns(_kernel(If(Compare("<", z * 64, rows), step), z), WHAT)
    guarded = [t for t in _turns(turned) if t.when is not None]
    assert len(guarded) == 2  # the take and the give of the loop's run
    text = stmt_str(turned)
    assert "if 0 < rows and 64 < rows" in text
    assert len(_turns(turned)) == 4  # and the first give, the last take, unguarded


def test_turns_in_a_loop_whose_bounds_depend_on_the_warpgroup_are_refused():
    """Each warpgroup would take as many turns as its own steps. (A loop of nothing but
    products is one turn, however many it issues.)"""
    z = Var("threadIdx.z.consumer", "int32", CONSUMER)
    step = For(J, const(0), z + 1, "serial", Seq((_product(S, Q), _softmax())))
    with pytest.raises(LoweringError, match="bounds depend on the warpgroup's index"):
        take_turns(_kernel(step, z), WHAT)


def test_turns_need_the_roles_parted():
    z = Var("threadIdx.z.consumer", "int32", CONSUMER)
    consumers = For(z, const(0), const(2), "bound", _product(S, Q), "threadIdx.z")
    with pytest.raises(LoweringError, match="once the producer warpgroup has gone its own way"):
        take_turns(Seq((Barrier(), consumers)), WHAT)
