"""The loops a pragma names, each rewritten by its pass or the pragma refused.

A pragma that asks a GPU pass for a change of a loop (``overlap_products``,
``skip_unit_scales``) names the loop by its axis. Lowering may have copied the loop (a causal
mask's steps below the diagonal and on it) or left none (a scan of one step). Each copy is
offered to the pass; a name whose copies the pass took none of is the pragma's error, since
the schedule asked for what the loop cannot give.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import LoweringError
from ..core.nodes import For, Stmt
from ..core.visit import transform_stmt


def rewrite_pragma_loops(
    body: Stmt,
    loops: dict[str, str],
    rewrite: Callable[[For], Stmt | None],
    pragma: str,
    why: str,
) -> Stmt:
    """`body` with each loop named in `loops` (the axis's name -> its stage's) replaced by
    `rewrite(loop)` (None: the loop does not have the pass's shape); where no copy of a named
    loop had it, a `LoweringError` naming the stage and `pragma`, and saying `why` (what the
    loop is not, then the way out)."""
    if not loops:
        return body
    seen: set[str] = set()
    taken: set[str] = set()

    def offer(s: Stmt) -> Stmt | None:
        if not (isinstance(s, For) and s.var.name in loops):
            return None
        seen.add(s.var.name)
        done = rewrite(s)
        if done is not None:
            taken.add(s.var.name)
        return done

    result = transform_stmt(body, offer)
    for name in sorted(seen - taken):
        raise LoweringError(
            f"In schedule for '{loops[name]}': pragma({name}, \"{pragma}\"): the loop {name} {why}"
        )
    return result
