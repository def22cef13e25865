"""Pure integer arithmetic emitted once where its first copy dominates the later ones.

Unrolled register tiles under per-element guards compute the same address terms and guard
terms (``4 * threadIdx.x``, ``lane % 4 * 2``) in every copy, each copy in a block of its own.
LLVM's value numbering merges them, but only after reading them all: printing, parsing and
every pass before it. In a causal attention kernel they were 40% of the IR. Reusing a value is
exact where its block dominates the insertion point, which the structured control flow of the
statement translator tells: the block a loop or branch was entered from dominates its body
and what follows it; an arm or a loop body dominates nothing after it. Branches made by other
code (a target's clipped stores, a select's arms) are not told: after one, the flow is not
where the translator left it (its `tip`), and the blocks of the constructs that end there are
not taken as dominating anything after them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llvmlite import ir


class Reuse:
    """Values of pure computations by key (an operation and its operands' identities), with
    the blocks known to dominate the builder's insertion point."""

    def __init__(self, builder: ir.IRBuilder) -> None:
        self.b = builder
        self._values: dict[tuple, tuple] = {}
        self._above: dict[ir.Block, int] = {}  # dominating blocks, counted (pushed twice)
        self._order: list[ir.Block] = []
        self._tip = builder.block  # where the translator's own flow of the region is

    def value(self, key: tuple, make: Callable[[], ir.Value], *operands: ir.Value) -> ir.Value:
        """The value of `key` emitted earlier in a block that dominates the insertion point,
        else `make()`, emitted here. `operands` are kept alive: their ids are in keys."""
        found = self._values.get(key)
        if found is not None and (found[0] is self.b.block or found[0] in self._above):
            return found[1]
        value = make()
        self._values[key] = (self.b.block, value, operands)
        return value

    def at_entry(self, key: tuple, make: Callable[[], ir.Value], *operands: ir.Value) -> ir.Value:
        """`value` for a computation over what the function's entry block holds (its stack
        slots) and constants: made there, once, it dominates every use. A register tile's
        element addresses, read under a guard each in unrolled code, were a third of the
        remaining IR."""
        entry = self.b.function.entry_basic_block
        found = self._values.get(key)
        if found is not None and found[0] is entry:
            return found[1]
        with self.b.goto_block(entry):
            value = make()
        self._values[key] = (entry, value, operands)
        return value

    @contextmanager
    def dominated(self, *blocks: ir.Block) -> Iterator[None]:
        """Code emitted in the ``with`` block runs only after `blocks` (the block its construct
        was entered from, a loop's header); what is emitted inside dominates nothing after."""
        mark, tip = len(self._order), self._tip
        for block in blocks:
            self._push(block)
        self._tip = self.b.block
        try:
            yield
        finally:
            while len(self._order) > mark:
                block = self._order.pop()
                self._above[block] -= 1
                if not self._above[block]:
                    del self._above[block]
            self._tip = tip

    def follows(self, block: ir.Block) -> None:
        """A construct entered from `block` ended at the insertion point: `block` dominates
        the rest of the region (until the enclosing `dominated` one ends), when the construct
        began where the region's flow was. Inside an arm of a branch made by other code,
        `block` dominates that arm alone, and nothing is recorded."""
        if block is self._tip:
            self._push(block)
            self._tip = self.b.block

    def _push(self, block: ir.Block) -> None:
        self._order.append(block)
        self._above[block] = self._above.get(block, 0) + 1


__all__ = ["Reuse"]
