"""Whether the index arithmetic of a lowered loop nest can leave int32, though its values fit.

`index_type` picks int32 when every size, extent and element count fits it. The expressions
isl generates to recover loop indices from a fused or split loop can still pass through larger
values on the way: ``(32640 * f + 32767 * t + 32767) // 32768`` with ``f`` up to 131071 is
about 4.3e9 before the division brings it back under the tensor's extent, and in int32 it
wraps, so the kernel reads and writes at addresses outside its buffers. `may_overflow` bounds
every integer subexpression by interval arithmetic over the loops' ranges, where they are
constant; the driver then lowers the kernel again in int64. Where a range depends on a size
the bound is unknown and nothing is claimed (a call checks its sizes: `runtime.size_limits`).
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Const, Expr, Select, Unary, Var
from ..core.nodes import For, Let, Stmt
from ..core.visit import expr_children, stmt_children, stmt_exprs

Interval = tuple[int, int] | None  # inclusive bounds, None where unknown

INT32 = (-(2**31), 2**31 - 1)


def may_overflow(body: Stmt) -> bool:
    """True where some integer subexpression of `body` provably reaches past int32."""
    return _stmt(body, {})


def _stmt(s: Stmt, env: dict[Var, Interval]) -> bool:
    bounds = _Bounds(env)
    for e in stmt_exprs(s):
        bounds.of(e)
        if bounds.wide:
            return True
    if isinstance(s, For):
        start, extent = bounds.of(s.min), bounds.of(s.extent)
        rng = None
        if start is not None and extent is not None and extent[1] >= 1:
            rng = (start[0], start[1] + extent[1] - 1)
        return _stmt(s.body, {**env, s.var: rng})
    if isinstance(s, Let):
        return _stmt(s.body, {**env, s.var: bounds.of(s.value)})
    return any(_stmt(child, env) for child in stmt_children(s))


class _Bounds:
    """Interval arithmetic over expressions; `wide` once a known bound leaves int32."""

    def __init__(self, env: dict[Var, Interval]) -> None:
        self.env = env
        self.wide = False
        self.seen: dict[int, Interval] = {}  # by identity: generated expressions share parts

    def of(self, e: Expr) -> Interval:
        if id(e) in self.seen:
            return self.seen[id(e)]
        found = self._of(e)
        if found is not None and dt.is_int(e.dtype) and dt.bits(e.dtype) <= 32:
            if found[0] < INT32[0] or found[1] > INT32[1]:
                self.wide = True
        self.seen[id(e)] = found
        return found

    def _of(self, e: Expr) -> Interval:
        if isinstance(e, Const):
            return (int(e.value), int(e.value)) if dt.is_int(e.dtype) else None
        if isinstance(e, Var):
            return self.env.get(e)
        if isinstance(e, Binary) and dt.is_int(e.dtype):
            a, b = self.of(e.a), self.of(e.b)
            return None if a is None or b is None else _binary(e.op, a, b)
        if isinstance(e, Unary) and e.op == "-" and dt.is_int(e.dtype):
            a = self.of(e.a)
            return None if a is None else (-a[1], -a[0])
        if isinstance(e, Select) and dt.is_int(e.dtype):
            self.of(e.cond)
            a, b = self.of(e.true_value), self.of(e.false_value)
            return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
        if isinstance(e, Cast) and dt.is_int(e.dtype) and dt.is_int(e.value.dtype):
            return self.of(e.value)
        for child in expr_children(e):  # indices inside loads, conditions, float arithmetic
            self.of(child)
        return None


def _binary(op: str, a: tuple[int, int], b: tuple[int, int]) -> Interval:
    if op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if op == "*":
        corners = [x * y for x in a for y in b]
        return (min(corners), max(corners))
    if op in ("//", "/") and b[0] > 0:
        corners = [x // y for x in a for y in b]
        return (min(corners), max(corners))
    if op == "%" and b[0] > 0:
        return (0, b[1] - 1) if a[0] >= 0 else (-(b[1] - 1), b[1] - 1)
    if op == "min":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if op == "max":
        return (max(a[0], b[0]), max(a[1], b[1]))
    return None
