"""The lowering rules of a target applied to a lowered function (`ir.intrinsics`): each math
call or intrinsic with a rule for the target becomes the rule's expression, before code is
generated (and before the interpreter runs the function, so that a simulation computes what
the kernel does). An intrinsic left without a rule is an error here, naming it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ...errors import LoweringError
from ...ir.expr import Call, Expr
from ...ir.intrinsics import INTRIN, lowering_rule, plain_name
from ..core.nodes import LoweredFunc
from ..core.visit import expr_children, stmt_exprs, transform_stmt, walk_stmt


def apply_lowering_rules(func: LoweredFunc, target: str) -> LoweredFunc:
    """`func` with the calls that `target` has rules for replaced by the rules' results."""

    def lower(e: Expr) -> Expr | None:
        if not isinstance(e, Call):
            return None
        rule = lowering_rule(plain_name(e), target)
        if rule is None:
            return None
        result = rule(e)
        if result is e:
            return None
        if not isinstance(result, Expr) or result.dtype != e.dtype:
            got = getattr(result, "dtype", type(result).__name__)
            raise LoweringError(
                f"the lowering rule for {plain_name(e)!r} on {target} returned {result!r} "
                f"({got}); a rule returns an expression of the call's dtype ({e.dtype})"
            )
        return result

    # a rule's result depends on the call alone: unrolled copies share their subtrees, and
    # each distinct one is lowered and checked once
    body = transform_stmt(func.body, expr_fn=lower, memo={})
    seen: set[int] = set()
    for s in walk_stmt(body):
        for top in stmt_exprs(s):
            for e in _unseen(top, seen):
                if isinstance(e, Call) and e.name.startswith(INTRIN):
                    raise LoweringError(
                        f"the intrinsic {plain_name(e)!r} (call_intrin) has no lowering rule "
                        f"for the {target} target; register one with "
                        f"register_intrin_lowering({plain_name(e)!r}, target={target!r}, f=...)"
                    )
    return replace(func, body=body)


def _unseen(e: Expr, seen: set[int]) -> Iterator[Expr]:
    """The nodes of `e` not in `seen` (by id, the tree alive meanwhile), added to it; the
    subtrees of a node seen before are not entered."""
    stack = [e]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(expr_children(node))
