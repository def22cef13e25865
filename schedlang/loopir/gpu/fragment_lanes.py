"""Stages computed on a warpgroup's accumulator element by element: each thread its own elements.

A stage stored in a ``wgmma.accumulator`` fragment that no tensor instruction computes (a scale,
a mask, an ``exp``, a conversion; a row's maximum or sum) comes out of lowering as loops over
the fragment's rows and columns, as if one thread computed them all. No thread can: each holds
only its slots (`fragments`). This pass gives each thread of the warpgroup the elements it
holds, as TileLang's parallel loops over fragments do:

- a nest over rows and columns storing a tile's elements becomes, under loops bound to the lane
  (``threadIdx.x``) and the warp (``threadIdx.y``), unrolled loops over the thread's rows
  ``64 t + 16 w + 8 v + g`` and columns ``8 h + 2 l + e`` (``g, l = lane // 4, lane % 4``);
  a fragment read at the same element is read at its slot, a column of rows
  (`fragments.holds_rows`) at the row's slot; where the stage's column loop is vectorized
  (``s[F].vectorize``), each pair ``e`` of adjacent columns runs as two lanes of a vector (two
  halves in one register, one instruction for both: a byte's two nibbles dequantised at once);
- a nest over rows storing a column of rows runs each row in the four lanes that hold it;
- a reduction into a column of rows over the columns of a tile: each thread combines its own
  columns of each of its rows, the quad combines its four partial results by warp shuffles (a
  `ThreadAllReduce` over groups of 4 lanes), and each lane combines the total into its copy.

Where the loops cut the tile (at the edge of the domain), the elements outside keep guards.
The polyhedral layer (`poly.fragment_stages`) has checked that such a stage reads fragments
only at its own element or row; an index that is not is an `InternalError` here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

from ...errors import InternalError, LoweringError, warn
from ...ir.expr import Binary, Compare, Const, Expr, Var, const, logical
from ...ir.printer import expr_str
from ...ir.visit import substitute
from ..core.nodes import (
    FRAGMENT_SCOPES,
    Allocate,
    Buffer,
    For,
    If,
    Let,
    Load,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
    seq,
)
from ..core.simplify import simplify, simplify_expr
from ..core.visit import (
    path_to,
    stmt_children,
    substitute_expr,
    substitute_stmt,
    transform_expr,
    walk_expr,
    walk_stmt,
    with_children,
)
from ..from_isl import CrossThread
from ..index.divmod import linear_terms
from ..memory.fragments import element_slot, holds_rows, row_slot

QUAD = 4  # the lanes that hold one row


def lower_fragment_elements(body: Stmt, updates: dict[Store, CrossThread]) -> Stmt:
    """`body` with every nest that computes fragment elements one by one run by the threads
    that hold them (module doc); `updates` are the reduction stores `generate` returned."""
    if not any(_element_store(s) for s in walk_stmt(body)):
        return body
    names = itertools.count()

    def visit(s: Stmt) -> Stmt:
        if isinstance(s, For) and _is_row_loop(s):
            return _spread(s, updates, names)
        kids = stmt_children(s)
        new = tuple(visit(k) for k in kids)
        return s if all(a is b for a, b in zip(new, kids)) else with_children(s, new)

    return visit(body)


def _element_store(s: Stmt) -> bool:
    return isinstance(s, Store) and s.buffer.scope == "wgmma.accumulator"


def _row_index(buffer: Buffer, indices: tuple[Expr, ...]) -> Expr:
    return indices[-1] if holds_rows(buffer) else indices[-2]


def _is_row_loop(loop: For) -> bool:
    """Whether `loop` runs over the rows of a fragment that a store in it computes."""
    return any(
        _element_store(s) and _uses(_row_index(s.buffer, s.indices), loop.var)
        for s in walk_stmt(loop.body)
    )


@dataclass
class _Thread:
    """The running thread's element: its lane and warp, and the loops over its rows (tile `t`,
    half `v`) and columns (group `h`, element `e`)."""

    lane: Var
    warp: Var
    t: Var
    v: Var
    h: Var
    e: Var

    def row(self) -> Expr:
        """The row of the accumulator tile grid (`fragments.element_slot`)."""
        d = self.lane.dtype
        return _sum(
            _times(self.t, 64), _times(self.warp, 16), _times(self.v, 8), _div(self.lane, QUAD, d)
        )

    def column(self) -> Expr:
        d = self.lane.dtype
        return _sum(_times(self.h, 8), _times(_mod(self.lane, QUAD, d), 2), self.e)


def _spread(loop: For, updates: dict[Store, CrossThread], names) -> Stmt:
    """The row loop `loop`, distributed over the statements of its body (each touches one row
    at a time), each run by the threads that hold its elements."""
    out = []
    for piece in _pieces(loop.body):
        stores = [s for s in walk_stmt(piece) if _element_store(s)]
        if not stores:
            out.append(replace(loop, body=piece))
            continue
        if len(stores) > 1:
            names_ = ", ".join(s.buffer.name for s in stores)
            raise InternalError(f"one row loop stores fragment elements of {names_} together")
        k = next(names)
        out.append(_piece(loop, piece, stores[0], updates.get(stores[0]), k))
    return seq(*out)


def _pieces(body: Stmt) -> list[Stmt]:
    return list(body.stmts) if isinstance(body, Seq) else [body]


def _piece(loop: For, piece: Stmt, store: Store, update: CrossThread | None, k: int) -> Stmt:
    buffer = store.buffer
    if loop.kind == "vectorized":
        warn(
            f"loop {loop.var.name} over the rows of fragment '{buffer.name}' is vectorized, "
            "but a warpgroup fragment's rows are spread over its threads (two of each 16 a "
            "thread), so each runs alone (same results); vectorize the column axis, whose "
            "pairs a thread holds side by side"
        )
    d = loop.var.dtype
    prefix = f"{buffer.name}.{k}"
    thread = _Thread(
        *(Var(f"{prefix}.{n}", d, "loop") for n in ("lane", "warp", "t", "v", "h", "e"))
    )
    path = path_to(piece, store)[:-1]
    hardware = [s for s in path if isinstance(s, For) and s.kind == "bound"]
    inner = [s for s in path if isinstance(s, For) and s.kind != "bound"]
    if len(inner) > 1:
        raise InternalError(f"the elements of '{buffer.name}' computed in {len(inner) + 1} loops")
    col_loop = inner[0] if inner else None
    row_offset = _offset(_row_index(buffer, store.indices), loop.var, buffer)
    rows = _extent(buffer, -1 if holds_rows(buffer) else -2)
    if holds_rows(buffer) and update is not None and col_loop is not None:
        done = _reduction(loop, piece, store, update, col_loop, thread, row_offset, rows)
        return _around(hardware, done)
    if holds_rows(buffer) and col_loop is None:
        access = _Access(loop.var, row_offset, None, None, thread, rows)
        body = _rows_body(piece, loop, access)
        return _around(hardware, _threads(thread, _rows_loops(thread, rows, body)))
    if holds_rows(buffer) or col_loop is None:
        raise InternalError(f"the elements of '{buffer.name}' are not computed row by row")
    col_offset = _offset(store.indices[-1], col_loop.var, buffer)
    cols = _extent(buffer, -1)
    access = _Access(loop.var, row_offset, col_loop.var, col_offset, thread, rows, cols)
    body = _guarded(_without(piece, col_loop, access), loop, access)
    pairs = col_loop.kind == "vectorized"
    return _around(hardware, _threads(thread, _slot_loops(thread, rows, cols, body, pairs)))


def _around(loops: list[For], body: Stmt) -> Stmt:
    """`body` in `loops` (bound to the warpgroup's or the block's indices, which lowering puts
    innermost), outermost first: each thread runs its elements of its warpgroup's fragment."""
    for loop in reversed(loops):
        body = replace(loop, body=body)
    return body


@dataclass
class _Access:
    """How the row loop's variable `r` (and the column loop's `c`) map to the thread's element:
    the fragment's row ``r + row_offset`` is the thread's row."""

    r: Var
    row_offset: Expr
    c: Var | None
    col_offset: Expr | None
    thread: _Thread
    rows: int
    cols: int = 0

    def loads(self, e: Expr) -> Expr:
        """`e` with the fragment elements it reads at the thread's slots and the loops'
        variables at the thread's row and column."""
        mapped = transform_expr(e, self._slot_load)
        return self.place(mapped)

    def place(self, e: Expr) -> Expr:
        return simplify_expr(substitute_expr(e, self.mapping()))

    def mapping(self) -> dict[Var, Expr]:
        mapping = {self.r: _minus(self.thread.row(), self.row_offset)}
        if self.c is not None:
            mapping[self.c] = _minus(self.thread.column(), self.col_offset)
        return mapping

    def _slot_load(self, e: Expr) -> Expr | None:
        if type(e) is not Load or e.buffer.scope not in FRAGMENT_SCOPES:
            return None
        return Load(e.buffer, (self.slot(e.buffer, e.indices),), e.dtype)

    def slot(self, buffer: Buffer, indices: tuple[Expr, ...]) -> Expr:
        """The running thread's slot of `buffer` at `indices` (its own element or row)."""
        th = self.thread
        if holds_rows(buffer):
            self._check(buffer, indices[-1], self.r, self.row_offset)
            return self.place(row_slot(buffer, _lead(buffer, indices[:-1]), th.t, th.v))
        if self.c is None:
            raise InternalError(f"a row of '{buffer.name}' read element by element")
        self._check(buffer, indices[-2], self.r, self.row_offset)
        self._check(buffer, indices[-1], self.c, self.col_offset)
        lead = _lead(buffer, indices[:-2])
        return self.place(element_slot(buffer, lead, th.t, th.h, th.v, th.e))

    def _check(self, buffer: Buffer, index: Expr, var: Var, offset: Expr) -> None:
        """The read's element of `buffer` is the thread's own: its index moves with `var`
        from the same start as the stored fragment's (their boxes agree)."""
        if not _is_zero(_minus(index, _plus(var, offset))):
            raise LoweringError(
                f"'{buffer.name}' is read element by element at {expr_str(index)}, which is "
                f"not the element the thread holds ({var.name} + {expr_str(offset)}): the "
                "fragments' boxes start at different points; compute them at the same loop"
            )


def _rows_body(piece: Stmt, loop: For, access: _Access) -> Stmt:
    return _guarded(_mapped(piece, access, _store_at_slot(access)), loop, access)


def _store_at_slot(access: _Access) -> Callable[[Store], Stmt]:
    def store(s: Store) -> Stmt:
        slot = access.slot(s.buffer, s.indices)
        return Store(s.buffer, (slot,), access.loads(s.value))

    return store


def _mapped(s: Stmt, access: _Access, at_store: Callable[[Store], Stmt]) -> Stmt:
    """`s` with its fragment store replaced by `at_store(store)` and every other expression
    read at the thread's element."""
    if _element_store(s):
        return at_store(s)
    if isinstance(s, Store):
        return Store(s.buffer, tuple(access.loads(i) for i in s.indices), access.loads(s.value))
    if isinstance(s, If):
        then = _mapped(s.then, access, at_store)
        other = None if s.otherwise is None else _mapped(s.otherwise, access, at_store)
        return If(access.loads(s.cond), then, other)
    if isinstance(s, Let):
        return Let(s.var, access.loads(s.value), _mapped(s.body, access, at_store))
    if isinstance(s, For) and s.kind == "bound":  # moved around the thread's elements
        return _mapped(s.body, access, at_store)
    if isinstance(s, For):
        return replace(
            s,
            min=access.loads(s.min),
            extent=access.loads(s.extent),
            body=_mapped(s.body, access, at_store),
        )
    if isinstance(s, Seq):
        return Seq(tuple(_mapped(k, access, at_store) for k in s.stmts))
    raise InternalError(f"a {type(s).__name__} among the elements of a fragment")


def _without(piece: Stmt, col_loop: For, access: _Access, at_store=None) -> Stmt:
    """`piece` with `col_loop` replaced by its body under the guard of its bounds, and the
    fragment store by `at_store` (by default: at the thread's slot)."""
    at_store = at_store or _store_at_slot(access)

    def go(s: Stmt) -> Stmt:
        if s is col_loop:
            body = _mapped(s.body, access, at_store)
            if _whole(col_loop, access.col_offset, access.cols):
                return body
            inside = Compare("<", col_loop.var, _plus(col_loop.min, col_loop.extent))
            bounds = logical("and", (Compare(">=", col_loop.var, col_loop.min), inside))
            return If(access.loads(bounds), body)
        if isinstance(s, If):
            other = None if s.otherwise is None else go(s.otherwise)
            return If(access.loads(s.cond), go(s.then), other)
        if isinstance(s, Let):
            return Let(s.var, access.loads(s.value), go(s.body))
        if isinstance(s, Seq):
            return Seq(tuple(go(k) for k in s.stmts))
        return _mapped(s, access, at_store)

    return go(piece)


def _whole(loop: For, offset: Expr, extent: int) -> bool:
    """Whether `loop` runs over the `extent` elements of the fragment from the first (its
    variable plus `offset` being the element): no guard is needed."""
    return (
        _is_zero(_plus(loop.min, offset))
        and isinstance(loop.extent, Const)
        and loop.extent.value == extent
    )


def _guarded(body: Stmt, loop: For, access: _Access) -> Stmt:
    """`body` where the row loop's bounds hold (the loop covers the whole tile but at edges)."""
    if _whole(loop, access.row_offset, access.rows):
        return body
    inside = Compare("<", loop.var, _plus(loop.min, loop.extent))
    bounds = logical("and", (Compare(">=", loop.var, loop.min), inside))
    return simplify(If(access.place(bounds), body))


def _reduction(
    loop: For,
    piece: Stmt,
    store: Store,
    update: CrossThread,
    col_loop: For,
    thread: _Thread,
    row_offset: Expr,
    rows: int,
) -> Stmt:
    """A row's combination over a tile's columns: each thread its own columns, then the quad."""
    comb, buffer = update.combiner, store.buffer
    tiles = [
        n for n in walk_expr(update.value) if type(n) is Load and n.buffer.scope in FRAGMENT_SCOPES
    ]
    tiles = [n for n in tiles if not holds_rows(n.buffer)]
    if tiles:
        col_offset = _offset(tiles[0].indices[-1], col_loop.var, tiles[0].buffer)
        cols = _extent(tiles[0].buffer, -1)
    else:
        col_offset = simplify_expr(
            Binary("-", const(0, col_loop.var.dtype), col_loop.min, col_loop.var.dtype)
        )
        cols = _constant_extent(col_loop, buffer)
    access = _Access(loop.var, row_offset, col_loop.var, col_offset, thread, rows, cols)
    statements, allocated = [], []
    zero = (const(0),)
    for t, v in itertools.product(range(rows // 64), range(2)):
        fixed = {thread.t: const(t, thread.t.dtype), thread.v: const(v, thread.v.dtype)}
        part = Buffer(f"{buffer.name}.part{2 * t + v}", (const(1),), comb.dtype, "local")
        total = Buffer(f"{buffer.name}.total{2 * t + v}", (const(1),), comb.dtype, "local")
        allocated += [part, total]

        def accumulate(s: Store, part=part) -> Stmt:
            mine = substitute(
                comb.result, {comb.lhs: Load(part, zero, comb.dtype), comb.rhs: update.value}
            )
            return Store(part, zero, access.loads(mine))

        mine = _guarded(_without(piece, col_loop, access, accumulate), loop, access)
        own = _cols_loops(thread, cols, mine)
        slot = access.slot(buffer, store.indices)
        held = Load(buffer, (slot,), buffer.dtype)
        combined = substitute(
            comb.result, {comb.lhs: held, comb.rhs: Load(total, zero, comb.dtype)}
        )
        write = _guarded(Store(buffer, (slot,), combined), loop, access)
        quad = ThreadAllReduce((comb,), (part,), (total,), ("threadIdx.x",), lanes=QUAD)
        steps = seq(Store(part, zero, comb.identity), own, quad, write)
        statements.append(_substitute_stmt(steps, fixed))
    body = _threads(thread, seq(*statements))
    for b in reversed(allocated):
        body = Allocate(b, body)
    return body


def _substitute_stmt(s: Stmt, mapping: dict[Var, Expr]) -> Stmt:
    return simplify(substitute_stmt(s, mapping))


def _threads(thread: _Thread, body: Stmt) -> Stmt:
    return _bound(thread.lane, 32, "threadIdx.x", _bound(thread.warp, 4, "threadIdx.y", body))


def _bound(var: Var, extent: int, tag: str, body: Stmt) -> Stmt:
    return For(var, const(0, var.dtype), const(extent, var.dtype), "bound", body, tag)


def _rows_loops(thread: _Thread, rows: int, body: Stmt) -> Stmt:
    body = _unrolled(thread.v, 2, body)
    return _unrolled(thread.t, rows // 64, body)


def _cols_loops(thread: _Thread, cols: int, body: Stmt) -> Stmt:
    return _unrolled(thread.h, cols // 8, _unrolled(thread.e, 2, body))


def _slot_loops(thread: _Thread, rows: int, cols: int, body: Stmt, pairs: bool) -> Stmt:
    """The thread's elements in the order of their slots (tile, column group, row half,
    element): the two rows of a column side by side, so that what is read per column (a
    GEMM's per-column scale) serves both at once. Rows outermost, a thread's 64 column scales
    were read for its first row and held for its second, 64 registers beside the
    accumulator's."""
    kind = "vectorized" if pairs else "unrolled"
    elements = For(thread.e, const(0, thread.e.dtype), const(2, thread.e.dtype), kind, body)
    body = _unrolled(thread.v, 2, elements)
    return _unrolled(thread.t, rows // 64, _unrolled(thread.h, cols // 8, body))


def _unrolled(var: Var, extent: int, body: Stmt) -> Stmt:
    return For(var, const(0, var.dtype), const(extent, var.dtype), "unrolled", body)


def _is_zero(e: Expr) -> bool:
    """Whether the index expression `e` is zero whatever its variables, products by constants
    distributed: ``(t - 1) * 64 - (64 * t - 64)`` is."""
    terms = linear_terms(e, 1, opaque=True)
    if terms is None:
        return False
    total: dict[str, int] = {}
    for term, k in terms:
        key = "" if term is None else expr_str(term)
        total[key] = total.get(key, 0) + k
    return not any(total.values())


def _offset(index: Expr, var: Var, buffer: Buffer) -> Expr:
    """``index - var``, which must not depend on `var`: the fragment's element moves with the
    loop one for one."""
    offset = simplify_expr(_minus(index, var))
    if _uses(offset, var):
        raise InternalError(f"'{buffer.name}' indexed by {var.name} with a stride")
    return offset


def _extent(buffer: Buffer, dim: int) -> int:
    n = buffer.shape[dim]
    if not isinstance(n, Const):
        raise InternalError(f"fragment '{buffer.name}' has a symbolic extent")
    return int(n.value)


def _constant_extent(loop: For, buffer: Buffer) -> int:
    if not isinstance(loop.extent, Const) or int(loop.extent.value) % 8:
        raise InternalError(f"the columns combined into '{buffer.name}' are not a multiple of 8")
    return int(loop.extent.value)


def _lead(buffer: Buffer, indices: tuple[Expr, ...]) -> Expr:
    """The leading `indices` of `buffer`, flattened row-major."""
    d = indices[0].dtype if indices else "int32"
    flat: Expr = const(0, d)
    for dim, index in enumerate(indices):
        flat = _plus(_times(flat, _extent(buffer, dim)), index)
    return simplify_expr(flat)


def _uses(e: Expr, var: Var) -> bool:
    return any(node is var for node in walk_expr(e))


def _plus(a: Expr, b: Expr) -> Expr:
    return Binary("+", a, b, a.dtype)


def _minus(a: Expr, b: Expr) -> Expr:
    return Binary("-", a, b, a.dtype)


def _times(a: Expr, k: int) -> Expr:
    return Binary("*", a, const(k, a.dtype), a.dtype)


def _div(a: Expr, k: int, dtype: str) -> Expr:
    return Binary("//", a, const(k, dtype), dtype)


def _mod(a: Expr, k: int, dtype: str) -> Expr:
    return Binary("%", a, const(k, dtype), dtype)


def _sum(*terms: Expr) -> Expr:
    total = terms[0]
    for term in terms[1:]:
        total = _plus(total, term)
    return total
