"""Full tiles without guards: each block tests once whether its tile is whole.

When a size is not a multiple of the tiles, isl guards every statement of a thread with the
condition that its point exists (``ty < min(7, 249 - 16 * by - 8 * vy) + 1``). In a GPU GEMM
those guards sit inside the unrolled inner product, one per virtual thread and statement: the
hot loop branches, LLVM cannot keep the register tile in registers across them, and ptxas
spills. Yet for every block but the last row and column the guards are all true.

This pass finds, per kernel (the body under its ``blockIdx`` loops), the guards whose truth for
*every* iteration of the loops inside the block can be decided from the block indices and the
sizes alone, and emits ``if all_of_them: body_without_them else: body``: interior blocks run
the code a divisible size would get, boundary blocks the guarded code. Every thread of a block
takes the same branch, so barriers stay uniform. The decision is exact for affine guards over
loops with constant bounds (the minimum of an affine form over a box is the sum of its terms'
minima); other guards stay where they are. Shared allocations move above the branch so that
the two versions share one copy of each tile.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir.expr import Binary, Compare, Const, Expr, Var
from ...ir.printer import expr_str
from ..core.nodes import Allocate, For, If, Let, Seq, Stmt, ThreadAllReduce, seq
from ..core.visit import stmt_children, walk_stmt, with_children
from ..index.divmod import linear_terms

Terms = dict[Var | None, int]  # an affine form: coefficient per variable, None the constant
Range = tuple[int, int]  # inclusive


def split_full_tiles(stmt: Stmt) -> Stmt:
    """`stmt` with each kernel split into a guard-free version for whole tiles and the
    original for the rest (see the module docstring); unchanged where nothing can be lifted."""
    if isinstance(stmt, For) and (stmt.thread or "").startswith("blockIdx"):
        if _is_block_loop(stmt.body):
            return with_children(stmt, (split_full_tiles(stmt.body),))
        return with_children(stmt, (_split_kernel(stmt.body),))
    return with_children(stmt, tuple(split_full_tiles(c) for c in stmt_children(stmt)))


def _is_block_loop(s: Stmt) -> bool:
    return isinstance(s, For) and (s.thread or "").startswith("blockIdx")


def _split_kernel(body: Stmt) -> Stmt:
    if any(isinstance(s, ThreadAllReduce) for s in walk_stmt(body)):
        return body  # each collective gets its own shared scratch: two copies would double it
    lifted: dict[int, list[Terms]] = {}
    _collect(body, {}, lifted)
    if not lifted:
        return body
    return _split_parts(body, lifted)


def _split_parts(s: Stmt, lifted: dict[int, list[Terms]]) -> Stmt:
    """`s` with the parts that hold liftable guards split in two. A sequence is split per run
    of statements that hold some, so that code without any (a GEMM's k loop, when only the
    stores after it are guarded) is not duplicated: two copies of a hot loop in one kernel
    get registers for both."""
    if isinstance(s, Allocate):
        return with_children(s, (_split_parts(s.body, lifted),))
    if not isinstance(s, Seq):
        return _versions(s, lifted)
    parts: list[Stmt] = []
    run: list[Stmt] = []
    for child in s.stmts:
        if any(id(n) in lifted for n in walk_stmt(child)):
            run.append(child)
            continue
        if run:
            parts.append(_versions(seq(*run), lifted))
            run = []
        parts.append(child)
    if run:
        parts.append(_versions(seq(*run), lifted))
    return seq(*parts)


def _versions(s: Stmt, lifted: dict[int, list[Terms]]) -> Stmt:
    """``if all_guards_hold: s_without_them else: s``, the guards being those of `s`."""
    guards = [id(n) for n in walk_stmt(s) if id(n) in lifted]  # in program order: the
    conditions: dict[str, Expr] = {}  # code must not depend on where the nodes were allocated
    for guard in guards:
        for form in lifted[guard]:
            e = _as_condition(form)
            conditions.setdefault(expr_str(e), e)
    if not conditions:  # every lifted guard holds everywhere
        return _drop_guards(s, set(guards))
    shared: list[Allocate] = []
    fast = _without_shared(_drop_guards(s, set(guards)), [], set())
    rest = _without_shared(s, shared, set())
    split: Stmt = If(_all(list(conditions.values())), fast, rest)
    for alloc in reversed(shared):
        split = Allocate(alloc.buffer, split)
    return split


def _collect(s: Stmt, ranges: dict[Var, Range | None], lifted: dict[int, list[Terms]]) -> None:
    """Record, under ``id(if)``, the block-level conditions that make each liftable guard of
    `s` true everywhere; `ranges` maps the loop (and let) variables inside the kernel to their
    constant ranges, or None when a range is not constant."""
    if isinstance(s, If):
        forms = _forall(s.cond, ranges)
        if forms is not None:
            lifted[id(s)] = forms
    if isinstance(s, For):
        constant = isinstance(s.min, Const) and isinstance(s.extent, Const)
        span = None
        if constant and int(s.extent.value) > 0:
            low = int(s.min.value)
            span = (low, low + int(s.extent.value) - 1)
        ranges = {**ranges, s.var: span}
    elif isinstance(s, Let):
        ranges = {**ranges, s.var: None}
    for child in stmt_children(s):
        _collect(child, ranges, lifted)


def _forall(cond: Expr, ranges: dict[Var, Range | None]) -> list[Terms] | None:
    """Affine forms over block-level variables, all >= 0 exactly when `cond` holds at every
    point of `ranges`; None when that cannot be decided, or `cond` fails for every block."""
    atoms = affine_atoms(cond)
    if atoms is None:
        return None
    forms: list[Terms] = []
    for atom in atoms:
        outer: Terms = {}
        low = 0
        for var, k in atom.items():
            if var is None:
                low += k
            elif var in ranges:
                span = ranges[var]
                if span is None:
                    return None
                low += min(k * span[0], k * span[1])
            else:
                outer[var] = outer.get(var, 0) + k
        outer = {v: k for v, k in outer.items() if k}
        if not outer:
            if low < 0:
                return None  # false for every block: lifting it would never help
            continue
        outer[None] = low
        forms.append(outer)
    return forms


def affine_atoms(cond: Expr, opaque: bool = False) -> list[Terms] | None:
    """`cond` as affine forms that must all be >= 0, or None. With `opaque`, an index
    subexpression that is not a sum or a multiple (``lane % 4``) is a term of its own, where
    otherwise only variables are (`index.divmod.linear_terms`)."""
    if isinstance(cond, Binary) and cond.op == "and":
        left, right = affine_atoms(cond.a, opaque), affine_atoms(cond.b, opaque)
        return None if left is None or right is None else left + right
    if not (isinstance(cond, Compare) and dt.is_int(cond.a.dtype)):
        return None
    # a < b  <=>  b - a - 1 >= 0, and so on; `mins` expands min() on the side it bounds above
    if cond.op in ("<", "<="):
        small, big, slack = cond.a, cond.b, 1 if cond.op == "<" else 0
    elif cond.op in (">", ">="):
        small, big, slack = cond.b, cond.a, 1 if cond.op == ">" else 0
    else:
        return None
    smalls, bigs = _alternatives(small, "max", opaque), _alternatives(big, "min", opaque)
    if smalls is None or bigs is None:
        return None
    return [_difference(b, a, slack) for a in smalls for b in bigs]


def _alternatives(e: Expr, op: str, opaque: bool) -> list[Terms] | None:
    """The affine forms whose `op` (min or max) `e` is: ``min(a, b) + 1`` is [a + 1, b + 1]."""
    if isinstance(e, Binary) and e.op == op:
        left, right = _alternatives(e.a, op, opaque), _alternatives(e.b, op, opaque)
        return None if left is None or right is None else left + right
    if isinstance(e, Binary) and e.op in ("+", "-"):
        left, right = _alternatives(e.a, op, opaque), _alternatives(e.b, op, opaque)
        if left is None or right is None:
            return None
        if e.op == "-" and len(right) > 1:
            return None  # x - min(a, b) is a max: not a conjunction
        sign = 1 if e.op == "+" else -1
        return [_add(a, b, sign) for a in left for b in right]
    terms = linear_terms(e, 1, opaque)
    if terms is None:
        return None
    form: Terms = {}
    for var, k in terms:
        if var is not None and not opaque and not isinstance(var, Var):
            return None
        form[var] = form.get(var, 0) + k
    return [form]


def _add(a: Terms, b: Terms, sign: int) -> Terms:
    total = dict(a)
    for var, k in b.items():
        total[var] = total.get(var, 0) + sign * k
    return total


def _difference(big: Terms, small: Terms, slack: int) -> Terms:
    form = _add(big, small, -1)
    form[None] = form.get(None, 0) - slack
    return form


def _as_condition(form: Terms) -> Expr:
    dtype = next(var.dtype for var in form if var is not None)
    total: Expr = Const(form.get(None, 0), dtype)
    for var, k in form.items():
        if var is not None:
            term = var if k == 1 else Binary("*", Const(k, dtype), var, dtype)
            total = Binary("+", total, term, dtype)
    return Compare(">=", total, Const(0, dtype))


def _all(conditions: list[Expr]) -> Expr:
    result = conditions[0]
    for c in conditions[1:]:
        result = Binary("and", result, c, "bool")
    return result


def _without_shared(s: Stmt, found: list[Allocate], seen: set[int]) -> Stmt:
    """`s` with its shared-memory `Allocate`s replaced by their bodies, collected in `found`
    (once per buffer)."""
    if isinstance(s, Allocate) and s.buffer.scope == "shared":
        if id(s.buffer) not in seen:
            seen.add(id(s.buffer))
            found.append(s)
        return _without_shared(s.body, found, seen)
    kids = stmt_children(s)
    if not kids:
        return s
    return with_children(s, tuple(_without_shared(c, found, seen) for c in kids))


def _drop_guards(s: Stmt, guards: set[int]) -> Stmt:
    if isinstance(s, If) and id(s) in guards:
        return _drop_guards(s.then, guards)
    kids = stmt_children(s)
    if not kids:
        return s
    return with_children(s, tuple(_drop_guards(c, guards) for c in kids))
