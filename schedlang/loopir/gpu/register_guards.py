"""Register tiles computed whole: the guards around a thread's register updates are dropped.

When a size is not a multiple of the tiles, every statement of a thread is guarded by the
condition that its point exists (``ty < min(7, 249 - 16 * by - 8 * vy) + 1``). After
unrolling, those guards split the inner product of a register tile into hundreds of branches;
ptxas keeps values alive across all of them and spills. TE computes a thread's register tile
whole and guards only the stores to global memory; this pass does the same where it is exact.

A guard is *droppable* for a store to a register buffer `L` (``local``, or a fragment a
thread holds slots of) when it depends only on what is fixed for one element of `L` in one
thread: block indices and sizes (outside the kernel), thread indices (a thread's `L` is its
own), for a fragment the variables of loops around its allocation (a persistent block's
tile: each tile has a fragment of its own), and loop variables (virtual threads, the rows and
columns of the tile) that are themselves indices of `L`. The droppable guards go when
- every store to an element of `L` has the same droppable guards (up to the renaming of the
  thread and loop variables each statement gets; where every store names its element by
  constants, as unrolled stores do, those to one element, else all of them), so an element of
  `L` is either written by points that exist or by none: its value is garbage only where
  nothing that exists reads it; other guards (the tail of a reduction loop) stay;
- the dropped statements read only at indices that stay inside the buffers they read for every
  iteration of the loops around (interval arithmetic over loops with constant bounds), so the
  points that do not exist read nothing out of bounds: registers and shared memory. A
  fragment's stores may also read global memory: an index not shown in bounds is clamped into
  the buffer (``min(max(i, 0), extent - 1)``, the same index at every point that exists), so
  a missing row reads the last row's scale rather than past the end.
- no statement of `L` reads a shared buffer that some thread stored to since the block last met
  at a barrier (`_unsynced_reads`): lowering puts no barrier between a store and a read by the
  same threads, and without its guards the other threads would read before it.
Stores to global memory keep their guards, so nothing computed for a missing point is visible;
a fragment reaches global memory by `store_matrix`, which stores only the points that exist.
At 4000^3 the fp8 GEMM's scaling epilogue (`epilogue_in_place`) held every one of a thread's
128 accumulator slots under its own guards, a pass of about 2,400 instructions a tile (1,736 in
the whole kernel at 4096^3).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from math import prod

from ...ir.expr import Binary, Const, Expr, Var
from ...ir.printer import expr_str
from ..core.nodes import (
    FRAGMENT_SCOPES,
    REGISTER_SCOPES,
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    Let,
    Load,
    Stmt,
    Store,
    ThreadAllReduce,
)
from ..core.visit import (
    stmt_children,
    substitute_expr,
    transform_expr,
    walk_expr,
    walk_stmt,
    with_children,
)

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
    lifetimes: dict[int, frozenset[Var]] = {}  # a buffer's id -> the loops around its allocation
    _collect(body, _Scope({}, {}, ()), stores, lifetimes)
    unsynced: set[int] = set()
    _unsynced_reads(body, frozenset(), unsynced)
    droppable: dict[int, set[int]] = {}  # id(store) -> ids of the ifs that may go around it
    for buffer, found in stores.items():
        if any(id(store) in unsynced for store, _ in found):
            continue  # other threads would read what one thread wrote, with no barrier between
        if buffer.scope in REGISTER_SCOPES:
            fixed = lifetimes.get(id(buffer), frozenset()) if buffer.scope != "local" else None
            droppable.update(_droppable(found, fixed))
    return _rebuild(body, droppable) if droppable else body


def _unsynced_reads(s: Stmt, written: frozenset[int], found: set[int]) -> frozenset[int]:
    """The shared buffers (by id) stored to since the block last met at a barrier, after `s`
    given `written` before it; adds to `found` the stores that read one of them. Such a store
    runs only on the threads that stored it, or lowering would have put a barrier between:
    without its guards, the other threads would read before the barrier that is not there.
    (Copies by `cp.async` or the copy engine are made visible by their own waits.) A loop's
    body is walked again where it leaves a store unsynced: its last iteration's stores come
    before its next one's reads."""
    if isinstance(s, Barrier) or isinstance(s, ThreadAllReduce):
        return frozenset()
    if isinstance(s, Store):
        reads = {
            id(node.buffer)
            for e in (s.value, *s.indices)
            for node in walk_expr(e)
            if isinstance(node, Load) and node.buffer.scope == "shared"
        }
        if reads & written:
            found.add(id(s))
        return written | {id(s.buffer)} if s.buffer.scope == "shared" else written
    if isinstance(s, For):
        once = _unsynced_reads(s.body, written, found)
        if once <= written:  # the body leaves nothing new unsynced for its next iteration
            return once
        return _unsynced_reads(s.body, written | once, found)
    if isinstance(s, If):
        then = _unsynced_reads(s.then, written, found)
        other = written if s.otherwise is None else _unsynced_reads(s.otherwise, written, found)
        return then | other
    for child in stmt_children(s):
        written = _unsynced_reads(child, written, found)
    return written


def _collect(s: Stmt, scope: _Scope, stores: dict, lifetimes: dict) -> None:
    if isinstance(s, Store):
        stores[s.buffer].append((s, scope))
        return
    if isinstance(s, Allocate):
        lifetimes[id(s.buffer)] = frozenset(scope.ranges)
    if isinstance(s, If):
        _collect(s.then, _Scope(scope.ranges, scope.threads, (*scope.guards, s)), stores, lifetimes)
        if s.otherwise is not None:  # a guard with an else is never dropped
            _collect(s.otherwise, scope, stores, lifetimes)
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
        _collect(child, scope, stores, lifetimes)


def _droppable(
    found: list[tuple[Store, _Scope]], fixed: frozenset[Var] | None
) -> dict[int, set[int]]:
    """For the stores to one register buffer: the guards each may lose, when they all share
    the same droppable guards (module docstring); guards on anything else (the tail of a
    reduction loop) stay. `fixed`: for a fragment, the variables of the loops around its
    allocation (None for a local buffer)."""
    shapes: dict[tuple, set[str]] = defaultdict(set)
    result: dict[int, set[int]] = {}
    # Unrolled, each store names its element by constants: elements apart are compared apart.
    # An index that is not a constant may be any element: then all stores are compared.
    unrolled = all(isinstance(i, Const) for store, _ in found for i in store.indices)
    for store, scope in found:
        if not _reads_in_bounds(store, scope.ranges, fixed is None):
            return {}
        names = _names(store, scope)
        names.update({v: v for v in fixed or () if v not in names})
        shown = []
        result[id(store)] = set()
        for guard in scope.guards:
            if _depends_only_on(guard.cond, names, scope.ranges):
                shown.append(expr_str(substitute_expr(guard.cond, names)))
                result[id(store)].add(id(guard))
        element = tuple(int(i.value) for i in store.indices) if unrolled else ()
        shapes[element].add(" and ".join(sorted(shown)))
    if any(len(shown) != 1 or shown == {""} for shown in shapes.values()):
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


def _reads_in_bounds(store: Store, ranges: dict[Var, Range | None], on_chip: bool) -> bool:
    """Whether `store` reads inside every buffer it reads, and with `on_chip` reads only
    registers and shared memory."""
    if not _in_bounds(store.buffer, store.indices, ranges):
        return False
    for e in (store.value, *store.indices):
        for node in walk_expr(e):
            if not isinstance(node, Load):
                continue
            if node.buffer.scope not in (*REGISTER_SCOPES, "shared"):
                if on_chip:
                    return False
                continue  # clamped into the buffer where the guards go (`_clamped`)
            if not _in_bounds(node.buffer, node.indices, ranges):
                return False
    return True


def _in_bounds(buffer: Buffer, indices: tuple[Expr, ...], ranges: dict[Var, Range | None]) -> bool:
    if buffer.scope in FRAGMENT_SCOPES and len(indices) == 1:  # a slot of a thread's fragment
        span, extents = _span(indices[0], ranges), [_const(n) for n in buffer.shape]
        return span is not None and None not in extents and 0 <= span[0] <= span[1] < prod(extents)
    for index, extent in zip(indices, buffer.shape):
        span = _span(index, ranges)
        if span is None or not isinstance(extent, Const):
            return False
        if span[0] < 0 or span[1] >= int(extent.value):
            return False
    return True


def _const(e: Expr) -> int | None:
    return int(e.value) if isinstance(e, Const) else None


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
    """`s` without the ifs that every store under them may lose, a fragment's reads of
    global memory under them clamped into their buffers."""
    if isinstance(s, If) and s.otherwise is None and _only(s, droppable):
        return _rebuild(s.then, droppable)
    if isinstance(s, Store) and s.buffer.scope in FRAGMENT_SCOPES and droppable.get(id(s)):
        return Store(s.buffer, s.indices, transform_expr(s.value, _clamped))
    kids = stmt_children(s)
    if not kids:
        return s
    return with_children(s, tuple(_rebuild(c, droppable) for c in kids))


def _clamped(e: Expr) -> Expr | None:
    """A read of global memory with each index not a constant clamped into the buffer."""
    if not (isinstance(e, Load) and e.buffer.scope not in (*REGISTER_SCOPES, "shared")):
        return None
    indices = tuple(
        index
        if isinstance(index, Const)
        else Binary(
            "max",
            Binary("min", index, extent - 1, index.dtype),
            Const(0, index.dtype),
            index.dtype,
        )
        for index, extent in zip(e.indices, e.buffer.shape)
    )
    return Load(e.buffer, indices, e.dtype)


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
