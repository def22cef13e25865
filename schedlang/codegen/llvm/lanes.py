"""Which parts of a vectorized loop's body vary across lanes, and how.

A loop of kind ``vectorized`` runs its body once with the loop variable a vector of lanes. An
index that does not mention the lane variable is *uniform* (one scalar for all lanes), one that
is ``uniform + 1 * lane`` in the last dimension of a compact buffer is *contiguous* (one vector
load or store), anything else is a *gather* (lane by lane). `why_scalar` says whether a body
can be emitted this way at all; when it cannot, the loop runs as a scalar loop (same results).
"""

from __future__ import annotations

from ...ir.expr import Binary, Const, Expr, Var
from ...loopir.core.nodes import Buffer, For, If, Let, Load, Seq, Stmt, Store
from ...loopir.core.visit import expr_children, walk_expr
from ...loopir.index.strides import depends_on, lane_stride

MAX_LANES = 64
REDUCE_OPS = ("+", "*", "min", "max")


def access_kind(
    buffer: Buffer, indices: tuple[Expr, ...], lane: Var, lanes: int | None = None
) -> str:
    """``"uniform"``, ``"contiguous"`` or ``"gather"`` (see the module docstring); knowing
    the lanes' count, an index that mentions the lane may still be uniform
    (`strides.lane_stride`)."""
    strides = [lane_stride(i, lane, lanes) for i in indices]
    if all(s == 0 for s in strides):
        return "uniform"
    compact_last = buffer.strides is None or (
        isinstance(buffer.strides[-1], Const) and int(buffer.strides[-1].value) == 1
    )
    if strides[-1] == 1 and all(s == 0 for s in strides[:-1]) and compact_last:
        return "contiguous"
    return "gather"


def same_expr(a: Expr, b: Expr) -> bool:
    """Structural equality (variables and buffers by identity)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.dtype != b.dtype:
        return False
    if isinstance(a, Var):
        return False
    if isinstance(a, Const):
        return a.value == b.value
    if isinstance(a, Load) and a.buffer is not b.buffer:
        return False
    for field in ("op", "name"):
        if getattr(a, field, None) != getattr(b, field, None):
            return False
    ka, kb = expr_children(a), expr_children(b)
    return len(ka) == len(kb) and all(same_expr(x, y) for x, y in zip(ka, kb))


def reduction(store: Store, lane: Var) -> tuple[str, Expr] | None:
    """``(op, term)`` when `store` is ``B[u] = B[u] op term`` (or ``term op B[u]``; the
    operators are commutative) with uniform `u` and a `term` that varies across lanes and does
    not read ``B``."""
    value = store.value
    if not (isinstance(value, Binary) and value.op in REDUCE_OPS):
        return None
    for acc, term in ((value.a, value.b), (value.b, value.a)):
        if not (isinstance(acc, Load) and acc.buffer is store.buffer):
            continue
        if not all(same_expr(x, y) for x, y in zip(acc.indices, store.indices)):
            continue
        if depends_on(term, lane) and not _reads(term, store.buffer):
            return value.op, term
    return None


def _reads(e: Expr, buffer: Buffer) -> bool:
    return any(isinstance(n, Load) and n.buffer is buffer for n in walk_expr(e))


def why_scalar(loop: For) -> str | None:
    """Why `loop` (kind ``vectorized``) must run as a scalar loop, or None when it need not."""
    if not isinstance(loop.extent, Const):
        return "its extent is symbolic"
    if not 1 <= int(loop.extent.value) <= MAX_LANES:
        return f"it has {loop.extent.value} iterations, more than {MAX_LANES} lanes"
    return _body_problem(loop.body, loop.var)


def _body_problem(s: Stmt, lane: Var) -> str | None:
    if isinstance(s, Seq):
        return next(filter(None, (_body_problem(x, lane) for x in s.stmts)), None)
    if isinstance(s, If):
        branches = [s.then] if s.otherwise is None else [s.then, s.otherwise]
        return next(filter(None, (_body_problem(x, lane) for x in branches)), None)
    if isinstance(s, Let):
        if depends_on(s.value, lane):
            return f"the value of {s.var.name} differs between lanes"
        return _body_problem(s.body, lane)
    if isinstance(s, Store):
        if access_kind(s.buffer, s.indices, lane) != "uniform" or reduction(s, lane) is not None:
            return None
        if depends_on(s.value, lane) or _reads(s.value, s.buffer):
            return f"every lane stores to one element of {s.buffer.name} (not a reduction)"
        return None
    if isinstance(s, For):
        return f"its body holds the loop {s.var.name}"
    return f"its body holds {type(s).__name__.lower()} statements"
