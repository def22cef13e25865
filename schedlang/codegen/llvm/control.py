"""Structured control flow for llvmlite builders, as context managers (numba's cgutils style).

``with for_range(b, lo, hi) as i:`` emits a counted loop and positions the builder in its body;
``with if_then(b, cond):`` a one-armed branch. Code after the ``with`` continues in the merge
block, so statement translation reads like the loop nest it translates.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

UNROLL_FULL = "llvm.loop.unroll.full"  # the loop hint `for_range(unroll=True)` attaches
LICM_OFF = "llvm.licm.disable"  # the loop hint `for_range(hoist=False)` attaches


@contextmanager
def for_range(
    b: ir.IRBuilder,
    lo: ir.Value,
    hi: ir.Value,
    name: str = "i",
    unroll: bool = False,
    hoist: bool = True,
) -> Iterator[ir.Value]:
    """A loop over ``[lo, hi)`` (signed, step 1); yields the induction variable. With
    `unroll`, LLVM is told to unroll it completely (its trip count must be a constant); without
    `hoist`, to move nothing out of it (``llvm.licm.disable``)."""
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    index = b.phi(lo.type, name=name)
    index.add_incoming(lo, pre)
    b.cbranch(b.icmp_signed("<", index, hi), body, done)
    b.position_at_end(body)
    yield index
    step = b.add(index, ir.Constant(lo.type, 1), name=f"{name}.next", flags=("nsw",))
    index.add_incoming(step, b.block)
    back = b.branch(head)
    hints = ([UNROLL_FULL] if unroll else []) + ([] if hoist else [LICM_OFF])
    if hints:
        _hint(b.module, back, hints)
    b.position_at_end(done)


def _hint(module: ir.Module, back_edge: ir.Instruction, hints: list[str]) -> None:
    """Mark the loop whose back edge is `back_edge` with `hints` (``llvm.loop`` properties).
    LLVM knows a loop's metadata by a node whose first operand is the node itself, which
    llvmlite cannot make: the node is made unique by a placeholder operand, then given its
    real operands."""
    nodes = [module.add_metadata([ir.MetaDataString(module, h)]) for h in hints]
    placeholder = ir.MetaDataString(module, f"loop {len(module.metadata)}")
    loop_id = module.add_metadata([placeholder])
    loop_id.operands = (loop_id, *nodes)
    back_edge.set_metadata("llvm.loop", loop_id)


@contextmanager
def if_then(b: ir.IRBuilder, cond: ir.Value, name: str = "if") -> Iterator[None]:
    """Code in the ``with`` block runs only when `cond` (an ``i1``) holds."""
    then = b.append_basic_block(f"{name}.then")
    merge = b.append_basic_block(f"{name}.end")
    b.cbranch(cond, then, merge)
    b.position_at_end(then)
    yield
    b.branch(merge)
    b.position_at_end(merge)


@contextmanager
def if_else(b: ir.IRBuilder, cond: ir.Value, name: str = "if") -> Iterator[tuple]:
    """Yields two context managers, the then and the else arm, to be entered in turn; read
    ``b.block`` at the end of an arm for the block a phi joins from."""
    then = b.append_basic_block(f"{name}.then")
    otherwise = b.append_basic_block(f"{name}.else")
    merge = b.append_basic_block(f"{name}.end")
    b.cbranch(cond, then, otherwise)

    @contextmanager
    def arm(block: ir.Block) -> Iterator[None]:
        b.position_at_end(block)
        yield
        b.branch(merge)

    yield arm(then), arm(otherwise)
    b.position_at_end(merge)


def phi_of(b: ir.IRBuilder, incoming: list[tuple[ir.Value, ir.Block]], name: str = "") -> ir.Value:
    """A phi in the current (merge) block joining `incoming` values."""
    node = b.phi(incoming[0][0].type, name=name)
    for value, block in incoming:
        node.add_incoming(value, block)
    return node
