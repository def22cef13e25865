"""Register tiles computed whole: the guards around a thread's register updates are dropped.

When a size is not a multiple of the tiles, every statement of a thread is guarded by the
condition that its point exists (``ty < min(7, 249 - 16 * by - 8 * vy) + 1``). After
unrolling, those guards split the inner product of a register tile into hundreds of branches;
ptxas keeps values alive across all of them and spills. TE computes a thread's register tile
whole and guards only the stores to global memory; this pass does the same where it is exact.

A guard is *droppable* for a store to a ``local`` buffer `L` when it depends only on what is
fixed for one element of `L` in one thread: block indices and sizes (outside the kernel),
thread indices (a thread's `L` is its own), and loop variables (virtual threads, the rows and
columns of the tile) that are themselves indices of `L`. The droppable guards go when
- every store to `L` has the same droppable guards (up to the renaming of the thread and
  loop variables each statement gets), so an element of `L` is either written by points that
  exist or by none: its value is garbage only where nothing that exists reads it; other guards
  (the tail of a reduction loop) stay;
- the dropped statements read only ``local`` and ``shared`` memory, at indices that stay inside
  those buffers for every iteration of the loops around (interval arithmetic over loops with
  constant bounds), so the points that do not exist read nothing out of bounds.
Stores to global memory keep their guards, so nothing computed for a missing point is visible.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ...ir.expr import Binary, Const, Expr, Var
from ...ir.printer import expr_str
from ..core.nodes import Buffer, For, If, Let, Load, Stmt, Store
from ..core.visit import stmt_children, substitute_expr, walk_expr, walk_stmt, with_children

Range = tuple[int, int]  # inclusive


@dataclass(frozen=True)
class _Scope:
    """What is known where a statement sits inside a kernel."""

    ranges: dict[Var, Range | None]  # loop and let variables inside the kernel
    threads: dict[Var, str]  # thread and virtual-thread loop variables -> their tag
    guards: tuple[If, ...]  # the enclosing ifs inside the kernel


def drop_register_guards(stmt: Stmt) -> Stmt:
    """`stmt` with the guards of whole register tiles dropped (see the module docstring)."""
    if isinstance(stmt, For) and (stmt.thread or "").startswith("blockIdx"):
        if isinstance(stmt.body, For) and (stmt.body.thread or "").startswith("blockIdx"):
            return with_children(stmt, (drop_register_guards(stmt.body),))
        return with_children(stmt, (_kernel(stmt.body),))
    return with_children(stmt, tuple(drop_register_guards(c) for c in stmt_children(stmt)))


def _kernel(body: Stmt) -> Stmt:
    stores: dict[Buffer, list[tuple[Store, _Scope]]] = defaultdict(list)
    _collect(body, _Scope({}, {}, ()), stores)
    droppable: dict[int, set[int]] = {}  # id(store) -> ids of the ifs that may go around it
    for buffer, found in stores.items():
        if buffer.scope == "local":
            droppable.update(_droppable(found))
    return _rebuild(body, droppable) if droppable else body


def _collect(s: Stmt, scope: _Scope, stores: dict[Buffer, list[tuple[Store, _Scope]]]) -> None:
    if isinstance(s, Store):
        stores[s.buffer].append((s, scope))
        return
    if isinstance(s, If):
        _collect(s.then, _Scope(scope.ranges, scope.threads, (*scope.guards, s)), stores)
        if s.otherwise is not None:
            _collect(s.otherwise, scope, stores)  # a guard with an else is never dropped
        return
    if isinstance(s, For):
        span = None
        if isinstance(s.min, Const) and isinstance(s.extent, Const) and int(s.extent.value) > 0:
            low = int(s.min.value)
            span = (low, low + int(s.extent.value) - 1)
        threads = scope.threads
        if s.kind == "vthread":
            threads = {**threads, s.var: "vthread"}
        elif s.kind == "bound" and s.thread and not s.thread.startswith("blockIdx"):
            threads = {**threads, s.var: s.thread}
        scope = _Scope({**scope.ranges, s.var: span}, threads, scope.guards)
    elif isinstance(s, Let):
        scope = _Scope({**scope.ranges, s.var: None}, scope.threads, scope.guards)
    for child in stmt_children(s):
        _collect(child, scope, stores)


def _droppable(found: list[tuple[Store, _Scope]]) -> dict[int, set[int]]:
    """For the stores to one local buffer: the guards each may lose, when they all share the
    same droppable guards (module docstring); guards on anything else (the tail of a
    reduction loop) stay."""
    shapes = set()
    result: dict[int, set[int]] = {}
    for store, scope in found:
        if not _reads_on_chip(store, scope.ranges):
            return {}
        names = _names(store, scope)
        shown = []
        result[id(store)] = set()
        for guard in scope.guards:
            if _depends_only_on(guard.cond, names, scope.ranges):
                shown.append(expr_str(substitute_expr(guard.cond, names)))
                result[id(store)].add(id(guard))
        shapes.add(" and ".join(sorted(shown)))
    if len(shapes) != 1 or shapes == {""}:
        return {}
    return result


def _names(store: Store, scope: _Scope) -> dict[Var, Expr]:
    """Thread variables named by their tag, loop variables that index the buffer directly by
    their position there: what is fixed for one element of the buffer in one thread."""
    names: dict[Var, Expr] = {}
    for var, tag in scope.threads.items():
        if tag != "vthread":
            names[var] = Var(tag)
    for position, index in enumerate(store.indices):
        if isinstance(index, Var) and index in scope.ranges and index not in names:
            names[index] = Var(f"index{position}")
    return names


def _depends_only_on(cond: Expr, names: dict[Var, Expr], ranges: dict[Var, Range | None]) -> bool:
    for node in walk_expr(cond):
        if isinstance(node, Load):
            return False
        if isinstance(node, Var) and node in ranges and node not in names:
            return False
    return True


def _reads_on_chip(store: Store, ranges: dict[Var, Range | None]) -> bool:
    if not _in_bounds(store.buffer, store.indices, ranges):
        return False
    for e in (store.value, *store.indices):
        for node in walk_expr(e):
            if isinstance(node, Load) and not (
                node.buffer.scope in ("local", "shared")
                and _in_bounds(node.buffer, node.indices, ranges)
            ):
                return False
    return True


def _in_bounds(buffer: Buffer, indices: tuple[Expr, ...], ranges: dict[Var, Range | None]) -> bool:
    for index, extent in zip(indices, buffer.shape):
        span = _span(index, ranges)
        if span is None or not isinstance(extent, Const):
            return False
        if span[0] < 0 or span[1] >= int(extent.value):
            return False
    return True


def _span(e: Expr, ranges: dict[Var, Range | None]) -> Range | None:
    """The range of the integer `e` over `ranges` (interval arithmetic), or None."""
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    if isinstance(e, Var):
        return ranges.get(e)
    if not isinstance(e, Binary):
        return None
    a, b = _span(e.a, ranges), _span(e.b, ranges)
    if a is None or b is None:
        return None
    if e.op == "+":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "-":
        return a[0] - b[1], a[1] - b[0]
    if e.op == "*":
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)
    if e.op in ("min", "max"):
        pick = min if e.op == "min" else max
        return pick(a[0], b[0]), pick(a[1], b[1])
    if e.op in ("//", "%") and b[0] == b[1] and b[0] > 0:  # floor semantics
        d = b[0]
        if e.op == "//":
            return a[0] // d, a[1] // d
        return (a[0] % d, a[1] % d) if a[0] // d == a[1] // d else (0, d - 1)
    return None


def _rebuild(s: Stmt, droppable: dict[int, set[int]]) -> Stmt:
    """`s` without the ifs that every store under them may lose."""
    if isinstance(s, If) and s.otherwise is None and _only(s, droppable):
        return _rebuild(s.then, droppable)
    kids = stmt_children(s)
    if not kids:
        return s
    return with_children(s, tuple(_rebuild(c, droppable) for c in kids))


def _only(guard: If, droppable: dict[int, set[int]]) -> bool:
    """Whether every store under `guard` may lose it (and there is one): dropping a guard
    around anything else would run it for points that do not exist."""
    found = False
    for node in walk_stmt(guard.then):
        if isinstance(node, Store):
            if id(guard) not in droppable.get(id(node), ()):
                return False
            found = True
        elif not isinstance(node, (For, If, Let)) and stmt_children(node) == ():
            return False  # a barrier or a collective
    return found
