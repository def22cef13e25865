"""A register state of two halves picked by a loop's parity, kept as two register sets that
swap roles each step.

An online scan keeps its running maximum for this step and the last in two halves of one
register array, picked by the step's parity (``M.run.slot[(j - 1) % 2 * 2 + v]``). An index
the compiler cannot know makes the array a stack slot in local memory: each step stores the
new maximum and loads it back for its exponentials (attention, d = 128: two stores and four
loads a step, on the chain from the row maximum to the first exponential; ncu counted 0.73
stall cycles an instruction on local and L1 loads).

Inside the loop each access picks the half of this step (``(j + c) % 2`` with ``c`` even) or
of the last (``c`` odd), so the halves become two register sets of their own, `cur` and
`prev`, which swap at the end of every step (three moves a register, which LLVM's SSA form
turns into nothing but a renaming); before the loop they are read from the array's halves
where the loop starts, after it written back where it ends. Only a buffer all of whose
accesses in the loop are so indexed, by loads and stores, is changed; others stay as they are.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

from ...ir.expr import Binary, Const, Expr, Var, const
from ..core.nodes import (
    REGISTER_SCOPES,
    Allocate,
    Buffer,
    For,
    Load,
    MatrixOp,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
)
from ..core.simplify import simplify_expr
from ..core.visit import (
    stmt_children,
    stmt_exprs,
    substitute_expr,
    transform_stmt,
    walk_expr,
    walk_stmt,
)
from ..memory.fragments import lane_size

_MOST_RANGES = 256  # index combinations tried to bound what an access adds to its half


def rotate_parity(body: Stmt) -> Stmt:
    """`body` with each register buffer indexed by a loop's parity (module doc) kept in two
    register sets that swap each step."""
    return transform_stmt(body, _rotated)


def _rotated(s: Stmt) -> Stmt | None:
    if not (isinstance(s, For) and s.kind == "serial"):
        return None
    halves = _halves(s)
    if not halves:
        return None
    loop, before, after, buffers = s, [], [], []
    for buffer, half in halves.items():
        threads = _threads(loop.body, buffer)
        if threads is None:
            continue
        loop, load, store, new = _rotate(loop, buffer, half, threads)
        before.append(load)
        after.append(store)
        buffers += new
    if not buffers:
        return None
    out: Stmt = Seq((*before, loop, *after))
    for b in buffers:
        out = Allocate(b, out)
    return out


def _halves(loop: For) -> dict[Buffer, int]:
    """The register buffers every access of which in `loop` picks a half by its parity, and
    each one's half size."""
    found: dict[int, tuple[Buffer, int | None]] = {}
    ranges = _ranges(loop.body)

    def seen(buffer: Buffer, half: int | None) -> None:
        known = found.get(id(buffer), (buffer, half))[1]
        found[id(buffer)] = (buffer, half if known == half else None)

    for s in walk_stmt(loop.body):
        for x in (x for e in stmt_exprs(s) for x in walk_expr(e) if isinstance(x, Load)):
            seen(x.buffer, _half_of(x.buffer, x.indices, loop.var, ranges))
        if isinstance(s, Store):
            seen(s.buffer, _half_of(s.buffer, s.indices, loop.var, ranges))
        elif isinstance(s, Allocate):
            seen(s.buffer, None)  # a state of the step, not carried across it
        elif isinstance(s, MatrixOp):
            for t in (s.dst, *s.srcs):
                seen(t.buffer, None)
        elif isinstance(s, ThreadAllReduce):
            for b in (*s.sources, *s.results):
                seen(b, None)
    return {b: half for b, half in found.values() if half is not None}


def _half_of(buffer: Buffer, indices: tuple, j: Var, ranges: dict) -> int | None:
    """The size of the half of `buffer` that ``indices`` pick by `j`'s parity, or None: a
    local array of one dimension, or a fragment of two leading positions at a slot."""
    if buffer.scope not in REGISTER_SCOPES or len(indices) != 1:
        return None
    match = _parity(indices[0], j)
    if match is None:
        return None
    _, size, rest = match
    bounds = _bounds(rest, ranges)
    if bounds is None or bounds[0] < 0 or bounds[1] >= size:
        return None
    if buffer.scope == "local":
        whole = len(buffer.shape) == 1 and _is_const(buffer.shape[0], 2 * size)
    else:
        whole = _is_const(buffer.shape[0], 2) and lane_size(buffer) == 2 * size
    return size if whole else None


def _parity(e: Expr, j: Var) -> tuple[int, int, Expr] | None:
    """``(c % 2, K, r)`` where `e` is ``((j + c) % 2) * K + r`` and `r` does not read `j`."""
    terms = _terms(e)
    with_j = [t for t in terms if any(x is j for x in walk_expr(t))]
    if len(with_j) != 1:
        return None
    term = with_j[0]
    size = 1
    if isinstance(term, Binary) and term.op == "*":
        a, b = term.a, term.b
        term, scale = (a, b) if isinstance(b, Const) else (b, a)
        if not isinstance(scale, Const):
            return None
        size = int(scale.value)
    if not (isinstance(term, Binary) and term.op == "%" and _is_const(term.b, 2)):
        return None
    offset = _offset_of(term.a, j)
    if offset is None or size < 1:
        return None
    rest = [t for t in terms if t is not with_j[0]]
    r = rest[0] if rest else const(0, e.dtype)
    for t in rest[1:]:
        r = Binary("+", r, t, e.dtype)
    return offset % 2, size, r


def _terms(e: Expr) -> list[Expr]:
    if isinstance(e, Binary) and e.op == "+":
        return [*_terms(e.a), *_terms(e.b)]
    return [e]


def _offset_of(a: Expr, j: Var) -> int | None:
    """`c` where `a` is `j` plus or minus constants (``j - 1 - 1``: -2)."""
    if a is j:
        return 0
    if isinstance(a, Binary) and a.op in ("+", "-") and isinstance(a.b, Const):
        inner = _offset_of(a.a, j)
        c = int(a.b.value)
        return None if inner is None else inner + (c if a.op == "+" else -c)
    return None


def _ranges(body: Stmt) -> dict[Var, tuple[int, int]]:
    """The constant ranges of the loops inside `body`."""
    out = {}
    for s in walk_stmt(body):
        if isinstance(s, For) and isinstance(s.min, Const) and isinstance(s.extent, Const):
            out[s.var] = (int(s.min.value), int(s.min.value) + int(s.extent.value) - 1)
    return out


def _bounds(e: Expr, ranges: dict[Var, tuple[int, int]]) -> tuple[int, int] | None:
    """The least and greatest values of `e` over `ranges`, by trying them all (few)."""
    free = sorted({x for x in walk_expr(e) if isinstance(x, Var)}, key=lambda v: v.name)
    if any(v not in ranges for v in free) or any(isinstance(x, Load) for x in walk_expr(e)):
        return None
    spans = [range(ranges[v][0], ranges[v][1] + 1) for v in free]
    count = 1
    for span in spans:
        count *= len(span)
    if count > _MOST_RANGES:
        return None
    values = []
    for point in product(*spans):
        at = {v: const(p, v.dtype) for v, p in zip(free, point)}
        folded = simplify_expr(substitute_expr(e, at))
        if not isinstance(folded, Const):
            return None
        values.append(int(folded.value))
    return min(values), max(values)


def _threads(body: Stmt, buffer: Buffer) -> tuple[For, ...] | None:
    """The loops bound to a thread index around every access of `buffer` in `body`,
    outermost first (the same for each, up to their variables), or None."""
    found: set[tuple] = set()
    first: list[tuple[For, ...]] = []

    def visit(s: Stmt, around: tuple[For, ...]) -> None:
        if isinstance(s, For) and s.kind == "bound" and (s.thread or "").startswith("threadIdx"):
            around = (*around, s)
        touched = isinstance(s, Store) and s.buffer is buffer
        touched = touched or any(
            isinstance(x, Load) and x.buffer is buffer for e in stmt_exprs(s) for x in walk_expr(e)
        )
        if touched:
            found.add(tuple((f.thread, _value(f.extent), f.var.kind) for f in around))
            first.append(around)
        for kid in stmt_children(s):
            visit(kid, around)

    visit(body, ())
    if len(found) != 1 or any(shape[1] is None for shape in next(iter(found))):
        return None
    return first[0]


def _value(e: Expr) -> int | None:
    return int(e.value) if isinstance(e, Const) else None


def _run_by(threads: tuple[For, ...], stmts: list[Stmt]) -> Stmt:
    """`stmts` in loops bound as `threads` are (variables of their own): run by the threads
    that run the buffer's accesses, each on its own registers."""
    out: Stmt = Seq(tuple(stmts))
    for loop in reversed(threads):
        var = Var(f"{loop.var.name}.parity", loop.var.dtype, loop.var.kind)
        out = For(var, loop.min, loop.extent, "bound", out, loop.thread)
    return out


def _rotate(loop: For, buffer: Buffer, size: int, threads: tuple[For, ...]):
    """`loop` with `buffer`'s halves two register sets that swap at the end of each step,
    the statements that read them before it and write them back after it, and the sets."""
    # a thread's own registers, a fragment's slots included: local arrays that LLVM keeps in
    # registers (a fragment's registers are values the products' waits pass through)
    shape = (const(size, buffer.shape[0].dtype),)
    cur, prev, swap = (
        Buffer(f"{buffer.name}.{role}", shape, buffer.dtype, "local")
        for role in ("cur", "prev", "swap")
    )
    j = loop.var

    def picked(e: Expr) -> Expr | None:
        if isinstance(e, Load) and e.buffer is buffer:
            c, _, r = _parity(e.indices[0], j)
            return Load(cur if c == 0 else prev, (r,), e.dtype)
        return None

    def stored(s: Stmt) -> Stmt | None:
        if isinstance(s, Store) and s.buffer is buffer:
            c, _, r = _parity(s.indices[0], j)
            return Store(cur if c == 0 else prev, (r,), s.value)
        return None

    body = transform_stmt(loop.body, stored, picked)
    dtype = j.dtype
    moves = []
    for r in range(size):
        k = (const(r, dtype),)
        moves += [
            Store(swap, k, Load(cur, k, buffer.dtype)),
            Store(cur, k, Load(prev, k, buffer.dtype)),
            Store(prev, k, Load(swap, k, buffer.dtype)),
        ]
    rotated = replace(loop, body=Seq((body, _run_by(threads, moves))))
    end = Binary("+", loop.min, loop.extent, dtype)
    load, store = [], []
    for half, at in ((cur, loop.min), (prev, Binary("+", loop.min, const(1, dtype), dtype))):
        first = _flat(at, size, dtype)
        last = _flat(Binary("+", end, const(0 if half is cur else 1, dtype), dtype), size, dtype)
        for r in range(size):
            k = (const(r, dtype),)
            load.append(Store(half, k, Load(buffer, (_plus(first, r),), buffer.dtype)))
            store.append(Store(buffer, (_plus(last, r),), Load(half, k, buffer.dtype)))
    return rotated, _run_by(threads, load), _run_by(threads, store), [cur, prev, swap]


def _flat(at: Expr, size: int, dtype: str) -> Expr:
    """The first slot of the half picked by `at`'s parity."""
    parity = Binary("%", at, const(2, dtype), dtype)
    return simplify_expr(Binary("*", parity, const(size, dtype), dtype))


def _plus(e: Expr, r: int) -> Expr:
    return simplify_expr(Binary("+", e, const(r, e.dtype), e.dtype))


def _is_const(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and e.value == value
