"""Barrier insertion: synchronise the threads of a block around their shared-memory accesses.

The model is CUDA's, as in TVM's storage-sync planner and PPCG. A loop bound to ``threadIdx.*``
is not a loop on hardware: its variable is the thread index, every loop bound to one tag (sibling
or nested) is the same index, and the block size of a tag is the largest constant extent of its
loops in the kernel. A kernel is the body of an outermost ``blockIdx.*`` loop (the whole function
if there is none); shared buffers live per block, so nothing is carried from one block to the
next. Code outside thread loops is uniform: every thread runs it alike, which this pass treats as
one logical thread (so it stays correct if a code generator runs it on one thread only). A
shared allocation inside a loop is the same memory in every iteration, as on hardware.

Two accesses of one shared buffer, at least one a write, conflict unless both are uniform, or
both run in thread loops and each thread touches its own elements: for every thread tag, both
run under a guard fixing it (``if tx == 0``) or some index dimension of both is the same
expression ``c * tx + r`` over variables that did not change in between (lets expanded, every
loop of a tag one index). Two runs of one store by different threads do not conflict: a lowered
store writes each element the one value its definition gives (a refill with other values is
separated from the previous one by the reads in between). A barrier goes right before the
outermost statement whose first accesses (those a path from its start reaches without a barrier)
conflict with what is pending since the last barrier; a loop whose next iteration conflicts with
the end of the current one gets a barrier at the start of its body (the refill of a shared tile,
TE's placement), which also serves the loop's entry. The two branches of a thread-dependent if
run at the same time: if they conflict, they are split with a barrier between them.

Barriers must be reached by every thread of the block. A barrier under a thread-dependent guard
is made legal by pushing the guard inward: ``if g: a; barrier; b`` becomes ``if g: a``,
``barrier``, ``if g: b``, through uniform loops, lets, allocations and uniform ifs; a thread loop
smaller than the block size is the full loop with a guard ``tx < extent``. What cannot be made
legal (a barrier inside a loop nested in another loop of the same thread tag, under a thread
loop of symbolic extent, inside a loop whose bounds depend on the thread, in a vectorized or
parallel loop, or a guard that reads memory) is a `LoweringError` naming the buffer and the
construct. A single statement that reads and writes one shared buffer across threads (which no
barrier can order) is left as it is.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace

from ...errors import InternalError, LoweringError
from ...ir.expr import Binary, Compare, Const, Expr, Var
from ...ir.printer import expr_str
from ..core.nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
    BulkCopy,
    CallExtern,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
    seq,
)
from ..core.printer import stmt_head
from ..core.simplify import simplify_expr
from ..core.visit import substitute_expr, walk_expr, walk_stmt
from ..index.divmod import linear_terms

_THREAD = "thread index"  # the kind of the one variable per thread tag that indices compare by
_VERB = {"vectorized": "vectorize", "parallel": "parallelize"}


def insert_barriers(body: Stmt) -> Stmt:
    """`body` with the `Barrier` statements its shared-memory accesses need.

    Expects a lowered loop nest with its allocations placed (`insert_allocations`) and loops
    bound to hardware indices marked ``kind="bound"``; barriers already present are respected.
    Guarantees: no two threads of a block access one shared element (at least one writing)
    without a barrier between them (by the conflict rule of the module doc); every barrier
    is reached by all threads of the block (guards are pushed inward where needed); no barrier
    where nothing conflicts. ``shared`` buffers are synchronised, and ``global`` ones too where
    the function has no block loops (one block: its stages pass global temporaries between its
    threads); ``local`` memory is private, and global writes of other blocks are not ordered by
    barriers at all. Raises
    `LoweringError` where a needed barrier cannot be reached by every thread.
    """
    top = _Ctx(_launch_extents(body, into_blocks=False), False, frozenset(), {}, frozenset(), {})
    one_block = not any(
        isinstance(s, For) and s.kind == "bound" and (s.thread or "").startswith("blockIdx")
        for s in walk_stmt(body)
    )
    return _Inserter(global_too=one_block).visit(body, top)[0]


@dataclass(frozen=True, slots=True)
class _Access:
    """One load or store of a shared buffer, as the conflict test sees it."""

    key: int  # the same access seen on two paths has one key
    buffer: Buffer
    write: bool
    indices: tuple[Expr, ...]  # lets expanded, thread variables replaced by one per tag
    threads: frozenset[str]  # thread tags bound around it; empty in uniform code
    pins: dict[str, object]  # tags that a guard around it fixes (``if tx == 0``), by value
    stale: frozenset[Var]  # loop variables that may have changed since it ran
    site: Stmt

    def verb(self, present: bool) -> str:
        if present:
            return "writes" if self.write else "reads"
        return "wrote" if self.write else "read"


_Accesses = dict[int, _Access]


@dataclass(frozen=True, slots=True)
class _Summary:
    """What a statement shows its surroundings: `exposed` accesses run before any barrier of
    it, `out` ones after its last barrier; `must` says every run passes a barrier."""

    exposed: _Accesses
    out: _Accesses
    must: bool


_NOTHING = _Summary({}, {}, False)
_BARRIER = _Summary({}, {}, True)


@dataclass(frozen=True, slots=True)
class _Ctx:
    extents: dict[str, Expr]  # block size per thread tag in the current kernel
    in_block: bool  # inside a blockIdx loop
    tags: frozenset[str]  # thread tags bound around the statement
    pins: dict[str, object]  # thread tags fixed to one value by guards around the statement
    varying: frozenset[Var]  # variables whose value may differ between threads
    subst: dict[Var, Expr]  # let values (expanded) and thread variables (canonical)


class _Inserter:
    def __init__(self, global_too: bool) -> None:
        # a function without block loops is one block: its stages hand values to each other
        # through global temporaries too, and a barrier orders those as well
        self.scopes = ("shared", "global") if global_too else ("shared",)
        self.keys = itertools.count()
        self.reasons: dict[int, tuple[Barrier, str]] = {}
        self.canonical: dict[tuple[str, str], Var] = {}

    # -- statements ---------------------------------------------------------------------
    def visit(self, s: Stmt, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        if isinstance(s, Store):
            reads = self.reads(s, (*s.indices, s.value), ctx)
            write = self.access(s, s.buffer, s.indices, True, ctx)
            accesses = reads if write is None else {**reads, write.key: write}
            return s, _Summary(accesses, accesses, False)
        if isinstance(s, Barrier):
            return s, _Summary({}, {}, True)
        if isinstance(s, ThreadAllReduce):
            return s, _NOTHING  # its buffers are local; the target synchronises inside it
        if isinstance(s, MatrixOp):
            accesses = self.matrix_accesses(s, ctx)
            return s, _Summary(accesses, accesses, False)
        if isinstance(s, AsyncCopy):
            # a store that lands later; the pipeline that issues it waits and synchronises
            # before the copy is read, and reads of other copies are told apart by their index
            when = () if s.when is None else (s.when,)
            reads = self.reads(s, (*s.dst_index, *s.src_index, *when), ctx)
            write = self.access(s, s.dst, s.dst_index, True, ctx)
            accesses = reads if write is None else {**reads, write.key: write}
            return s, _Summary(accesses, accesses, False)
        if isinstance(s, (AsyncCommit, AsyncWait, BulkCopy, MBarrier, CallExtern)):
            # a C call runs on the CPU only, which has no threads to synchronise
            # bulk copies are ordered by their memory barriers (`bulk_pipeline`), not by these
            return s, _NOTHING
        if isinstance(s, Seq):
            return self.seq(s, ctx)
        if isinstance(s, If):
            return self.if_(s, ctx)
        if isinstance(s, Let):
            inner = replace(
                ctx,
                varying=ctx.varying | ({s.var} if _varies(s.value, ctx) else set()),
                subst={**ctx.subst, s.var: substitute_expr(s.value, ctx.subst)},
            )
            body, summary = self.visit(s.body, inner)
            return self.headed(s, body, summary, self.reads(s, (s.value,), ctx), None)
        if isinstance(s, Allocate):
            body, summary = self.visit(s.body, ctx)
            return replace(s, body=body), summary
        if isinstance(s, For):
            if s.kind == "bound" and s.thread.startswith("blockIdx"):
                return self.block_loop(s, ctx)
            if s.kind == "bound":
                return self.thread_loop(s, ctx)
            return self.loop(s, ctx)
        raise InternalError(f"barrier insertion does not know the statement {stmt_head(s)!r}")

    def seq(self, s: Seq, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        total = _NOTHING
        stmts: list[Stmt] = []
        for child in s.stmts:
            new, summary = self.visit(child, ctx)
            hit = _conflict(total.out, summary.exposed)
            if hit is not None:
                stmts.append(self.barrier(hit))
                total = _then(total, _BARRIER)
            total = _then(total, summary)
            stmts.append(new)
        return seq(*stmts), total

    def if_(self, s: If, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        head = self.reads(s, (s.cond,), ctx)
        pinned = replace(ctx, pins={**ctx.pins, **_pins(s.cond, ctx)})
        then, then_sum = self.guarded_branch(s.then, head, pinned)
        otherwise, else_sum = None, _NOTHING
        if s.otherwise is not None:
            otherwise, else_sum = self.guarded_branch(s.otherwise, head, ctx)
        start = _Summary(head, head, False)
        if not _varies(s.cond, ctx):  # every thread takes the same branch
            then_sum, else_sum = _then(start, then_sum), _then(start, else_sum)
            summary = _Summary(
                _union(then_sum.exposed, else_sum.exposed),
                _union(then_sum.out, else_sum.out),
                then_sum.must and else_sum.must,
            )
            return replace(s, then=then, otherwise=otherwise), summary
        # The branches' threads run at the same time. Where that needs a barrier, the guard is
        # pushed inward and the branches run one after the other, the then branch first.
        cross = _conflict(then_sum.out, else_sum.exposed)
        middle = None if cross is None else self.barrier(cross)
        summary = _then(_then(start, then_sum), else_sum if middle is None else _BARRIER)
        if middle is not None:
            summary = _then(summary, else_sum)
        new: Stmt = replace(s, then=then, otherwise=otherwise)
        if middle is not None or _has_barrier(new):
            new = seq(
                self.push_guard(s.cond, then),
                middle,
                None if otherwise is None else self.push_guard(~s.cond, otherwise),
            )
        return new, summary

    def guarded_branch(self, s: Stmt, head: _Accesses, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        """A branch of an if whose condition made the accesses `head`."""
        new, summary = self.visit(s, ctx)
        hit = _conflict(head, summary.exposed)
        if hit is None:
            return new, summary
        return seq(self.barrier(hit), new), _Summary({}, summary.out, True)

    def headed(
        self, s: For | Let, body: Stmt, summary: _Summary, head: _Accesses, var: Var | None
    ) -> tuple[Stmt, _Summary]:
        """`s` (a let or loop) rebuilt around `body`; `head` are the accesses of its own
        expressions, which run before the body. A loop (`var` given) may run zero times."""
        hit = _conflict(head, summary.exposed)
        if hit is not None:
            body = seq(self.barrier(hit), body)
            summary = _Summary({}, summary.out, True)
        must = summary.must
        if var is not None:
            must = must and isinstance(s.extent, Const) and s.extent.value > 0
        out = _union(summary.out, {} if must else head)
        return replace(s, body=body), _Summary(_union(head, summary.exposed), out, must)

    def block_loop(self, s: For, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        """A kernel: its shared memory is per block, so nothing enters or leaves it."""
        if not ctx.in_block:
            ctx = replace(ctx, extents=_launch_extents(s.body, into_blocks=True), in_block=True)
        body, _ = self.visit(s.body, ctx)
        return replace(s, body=body), _NOTHING

    def thread_loop(self, s: For, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        tag = s.thread
        key = (tag, s.var.dtype)
        if key not in self.canonical:
            self.canonical[key] = Var(tag, s.var.dtype, _THREAD)
        inner = replace(
            ctx,
            tags=ctx.tags | {tag},
            varying=ctx.varying | {s.var},
            subst={**ctx.subst, s.var: self.canonical[key]},
        )
        body, summary = self.visit(s.body, inner)
        new, summary = self.headed(s, body, summary, self.reads(s, (s.extent,), ctx), None)
        if not _has_barrier(new.body):
            return new, summary
        block = ctx.extents.get(tag)
        where = f"loop '{s.var.name}' ({tag})"
        if tag in ctx.tags:
            raise self.error(
                new.body,
                f"{where} is nested in another loop bound to {tag}, so it runs only where its "
                "index is in range and not every thread reaches the barrier",
                f"bind loop '{s.var.name}' to another thread axis, or do not bind it",
            )
        if block is not None and _same(s.extent, block):
            return new, summary
        if isinstance(s.extent, Const) and isinstance(block, Const):
            guard = s.var < s.extent
            return replace(new, extent=block, body=self.push_guard(guard, new.body)), summary
        size = "is not fixed" if block is None else f"is {expr_str(block)}"
        raise self.error(
            new.body,
            f"{where} has extent {expr_str(s.extent)} while the block size of {tag} {size}, "
            "so threads past its extent skip the barrier",
            f"make the thread extents of {tag} equal to the block size (split by a constant "
            "factor and bind the inner loop)",
        )

    def loop(self, s: For, ctx: _Ctx) -> tuple[Stmt, _Summary]:
        bounds_vary = _varies(s.min, ctx) or _varies(s.extent, ctx)
        inner = replace(ctx, varying=ctx.varying | ({s.var} if bounds_vary else set()))
        body, summary = self.visit(s.body, inner)
        carried = _stale(summary.out, s.var)  # the end of one iteration, seen from the next
        hit = _conflict(carried, summary.exposed)
        if hit is not None:
            body = seq(self.barrier(hit), body)
            summary = _Summary({}, summary.out, True)
        head = self.reads(s, (s.min, s.extent), ctx)
        new, result = self.headed(s, body, summary, head, s.var)
        result = replace(result, out=_stale(result.out, s.var))
        if not _has_barrier(new.body):
            return new, result
        where = f"loop '{s.var.name}'"
        if s.kind in ("vectorized", "parallel"):
            raise self.error(
                new.body,
                f"{where} is {s.kind}, and a barrier cannot run inside a {s.kind} loop",
                f"do not {_VERB[s.kind]} loop '{s.var.name}'",
            )
        if bounds_vary:
            end = simplify_expr(s.min + s.extent)
            raise self.error(
                new.body,
                f"{where} has bounds [{expr_str(s.min)}, {expr_str(end)}) that "
                "depend on the thread index, so threads reach the barrier different numbers "
                "of times",
                "make the loop bounds independent of thread indices (iterate to the largest "
                "bound and guard the body)",
            )
        return new, result

    # -- accesses -----------------------------------------------------------------------
    def access(self, site, buffer, indices, write: bool, ctx: _Ctx) -> _Access | None:
        if buffer.scope not in self.scopes:
            return None
        expanded = tuple(substitute_expr(i, ctx.subst) for i in indices)
        key = next(self.keys)
        return _Access(key, buffer, write, expanded, ctx.tags, ctx.pins, frozenset(), site)

    def matrix_accesses(self, s: MatrixOp, ctx: _Ctx) -> _Accesses:
        """A tensor instruction's accesses: the lanes of a warp (threadIdx.x) read or write
        a whole tile together, so no element of it is one thread's own (its tile dimensions
        are an index no other access shares)."""
        lanes = replace(ctx, tags=ctx.tags | {"threadIdx.x"})
        found = self.reads(s, [i for t in (s.dst, *s.srcs) for i in t.base], ctx)
        for tile, write in ((s.dst, True), *((t, False) for t in s.srcs)):
            spread = Var("tile", tile.base[0].dtype, "loop")
            indices = tuple(spread if d in tile.dims else i for d, i in enumerate(tile.base))
            access = self.access(s, tile.buffer, indices, write, lanes)
            if access is not None:
                found[access.key] = access
        return found

    def reads(self, site: Stmt, exprs, ctx: _Ctx) -> _Accesses:
        found: _Accesses = {}
        for e in exprs:
            for node in walk_expr(e):
                if isinstance(node, Load):
                    read = self.access(site, node.buffer, node.indices, False, ctx)
                    if read is not None:
                        found[read.key] = read
        return found

    # -- barriers and guards --------------------------------------------------------------
    def barrier(self, hit: tuple[_Access, _Access]) -> Barrier:
        before, after = hit
        why = (
            f"shared buffer '{after.buffer.name}' needs a barrier between "
            f"'{stmt_head(before.site)}' (which {before.verb(False)} it) and "
            f"'{stmt_head(after.site)}' (which {after.verb(True)} it)"
        )
        b = Barrier()
        self.reasons[id(b)] = (b, why)
        return b

    def push_guard(self, guard: Expr, s: Stmt) -> Stmt:
        """``if guard: s`` with every barrier of `s` moved out from under the guard."""
        if not _has_barrier(s):
            return If(guard, s)
        self.check_hoist(guard, guard, s)
        if isinstance(s, Barrier):
            return s
        if isinstance(s, Seq):
            parts: list[Stmt] = []
            group: list[Stmt] = []
            for child in s.stmts:
                if not _has_barrier(child):
                    group.append(child)
                    continue
                if group:
                    parts.append(If(guard, seq(*group)))
                    group = []
                parts.append(self.push_guard(guard, child))
            if group:
                parts.append(If(guard, seq(*group)))
            return seq(*parts)
        if isinstance(s, For):
            self.check_hoist(guard, s.min, s)
            self.check_hoist(guard, s.extent, s)
            return replace(s, body=self.push_guard(guard, s.body))
        if isinstance(s, Let):
            self.check_hoist(guard, s.value, s)
            return replace(s, body=self.push_guard(guard, s.body))
        if isinstance(s, Allocate):
            return replace(s, body=self.push_guard(guard, s.body))
        # An if, the only other statement that can hold a barrier; its condition is uniform
        # (a thread-dependent one was pushed inward already).
        self.check_hoist(guard, s.cond, s)
        otherwise = None if s.otherwise is None else self.push_guard(guard, s.otherwise)
        return replace(s, then=self.push_guard(guard, s.then), otherwise=otherwise)

    def check_hoist(self, guard: Expr, e: Expr, s: Stmt) -> None:
        """`e` is about to be evaluated by threads that `guard` excluded, or re-evaluated on
        both sides of a barrier: that is only sound for pure index arithmetic."""
        if any(isinstance(node, Load) for node in walk_expr(e)):
            raise self.error(
                s,
                f"the guard 'if {expr_str(guard)}:' depends on the thread, and splitting it at "
                f"the barrier would evaluate {expr_str(e)}, which reads memory, outside the "
                "guard or on both sides of the barrier",
                "compute the value into a local buffer first, or make the guard uniform",
            )

    def error(self, s: Stmt, why: str, fix: str) -> LoweringError:
        """The error for a barrier of `s` that not every thread can reach."""
        need = "the loop nest has a barrier there already"
        for node in walk_stmt(s):
            if isinstance(node, Barrier) and id(node) in self.reasons:
                need = self.reasons[id(node)][1]
                break
        return LoweringError(f"{need}, but {why}; {fix}")


# -- helpers ------------------------------------------------------------------------------
def _conflict(pending: _Accesses, later: _Accesses) -> tuple[_Access, _Access] | None:
    """The first pair (earlier, later) that needs a barrier between them, or None."""
    for b in later.values():
        for a in pending.values():
            if a.buffer is not b.buffer or not (a.write or b.write):
                continue
            if not a.threads and not b.threads:
                continue  # uniform code is one logical thread
            if a.write and b.write and a.site is b.site:
                continue  # one store writes an element's one value, whichever thread runs
            if a.threads and b.threads and _own_elements(a, b):
                continue
            if _other_copy(a, b) or _other_constant(a, b):
                continue
            return a, b
    return None


def _other_constant(a: _Access, b: _Access) -> bool:
    """Do `a` and `b` differ in a dimension indexed by two different constants (the copies of
    a pipeline's prologue)?"""
    return any(
        isinstance(x, Const) and isinstance(y, Const) and x.value != y.value
        for x, y in zip(a.indices, b.indices)
    )


def _other_copy(a: _Access, b: _Access) -> bool:
    """Do `a` and `b` index different copies of a double buffer? True if some dimension is
    ``x % m`` at one and ``y % m`` at the other with ``x - y`` a constant that ``m`` does not
    divide (``(ko + 1) % 2`` against ``ko % 2``), over variables that did not change between
    and are the same for every thread."""
    stale = a.stale | b.stale
    for x, y in zip(a.indices, b.indices):
        if not (_is_mod(x) and _is_mod(y) and _same(x.b, y.b)) or _mentions(x, stale):
            continue
        if not (_uniform(x) and _uniform(y)):
            continue  # a copy that depends on the thread could be another thread's
        difference = linear_terms(Binary("-", x.a, y.a, x.dtype), 1)
        if difference is None or not isinstance(x.b, Const):
            continue
        constant = sum(k for term, k in difference if term is None)
        rest: dict[str, int] = {}
        for term, k in difference:
            if term is not None:
                rest[expr_str(term)] = rest.get(expr_str(term), 0) + k
        if not any(rest.values()) and constant % int(x.b.value):
            return True
    return False


def _is_mod(e: Expr) -> bool:
    return isinstance(e, Binary) and e.op == "%"


def _own_elements(a: _Access, b: _Access) -> bool:
    """Does each thread touch, at `a` and at `b`, elements no other thread touches at the other?

    True if for each thread tag of either access, both run only where the tag has one value (a
    guard ``tx == 0``), or some dimension of both indices is the same expression ``c * t + r``
    (``t`` the tag's index, ``c`` a nonzero constant, ``r`` free of thread indices and of
    variables that changed in between): two threads differing in that tag differ there.
    """
    stale = a.stale | b.stale
    for tag in a.threads | b.threads:
        if a.pins.get(tag) is not None and a.pins.get(tag) == b.pins.get(tag):
            continue
        if not any(
            _same(x, y) and _linear_in(x, tag) and not _mentions(x, stale)
            for x, y in zip(a.indices, b.indices)
        ):
            return False
    return True


def _mentions(e: Expr, variables: frozenset[Var]) -> bool:
    return any(isinstance(n, Var) and n in variables for n in walk_expr(e))


def _linear_in(e: Expr, tag: str) -> bool:
    """Is `e` ``c * t + r`` for the index ``t`` of `tag`, a constant ``c != 0`` and ``r`` free
    of thread indices?"""
    if isinstance(e, Var):
        return e.kind == _THREAD and e.name == tag
    if not isinstance(e, Binary):
        return False
    if e.op in ("+", "-"):
        return (_linear_in(e.a, tag) and _uniform(e.b)) or (_linear_in(e.b, tag) and _uniform(e.a))
    if e.op == "*":
        return (_linear_in(e.a, tag) and _nonzero(e.b)) or (_linear_in(e.b, tag) and _nonzero(e.a))
    return False


def _uniform(e: Expr) -> bool:
    return not any(isinstance(n, Var) and n.kind == _THREAD for n in walk_expr(e))


def _nonzero(e: Expr) -> bool:
    return isinstance(e, Const) and e.value != 0


def _same(a: Expr, b: Expr) -> bool:
    """Structural equality of expressions (variables and buffers by identity)."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, Var):
        return False
    if isinstance(a, Load):
        return a.buffer is b.buffer and all(_same(x, y) for x, y in zip(a.indices, b.indices))
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, Expr):
            if not _same(x, y):
                return False
        elif isinstance(x, tuple):
            if len(x) != len(y) or not all(_same(p, q) for p, q in zip(x, y)):
                return False
        elif x != y:
            return False
    return True


def _then(first: _Summary, second: _Summary) -> _Summary:
    """The summary of `first` followed by `second`."""
    exposed = first.exposed if first.must else _union(first.exposed, second.exposed)
    out = second.out if second.must else _union(first.out, second.out)
    return _Summary(exposed, out, first.must or second.must)


def _union(a: _Accesses, b: _Accesses) -> _Accesses:
    if not a:
        return b
    if not b:
        return a
    merged = dict(a)
    for key, access in b.items():
        if key in merged:
            access = replace(access, stale=access.stale | merged[key].stale)
        merged[key] = access
    return merged


def _stale(accesses: _Accesses, var: Var) -> _Accesses:
    return {k: replace(a, stale=a.stale | {var}) for k, a in accesses.items()}


def _pins(cond: Expr, ctx: _Ctx) -> dict[str, object]:
    """The thread tags that `cond` (a conjunction) fixes to one value, as ``tx == 0`` does."""
    if isinstance(cond, Binary) and cond.op == "and":
        return {**_pins(cond.a, ctx), **_pins(cond.b, ctx)}
    if not (isinstance(cond, Compare) and cond.op == "=="):
        return {}
    for var, value in ((cond.a, cond.b), (cond.b, cond.a)):
        index = ctx.subst.get(var) if isinstance(var, Var) else None
        if isinstance(index, Var) and index.kind == _THREAD and isinstance(value, Const):
            return {index.name: value.value}
    return {}


def _varies(e: Expr, ctx: _Ctx) -> bool:
    """May `e` differ between the threads of a block?"""
    for node in walk_expr(e):
        if isinstance(node, Var) and node in ctx.varying:
            return True
        if isinstance(node, Load) and node.buffer.scope == "local":
            return True
    return False


def _has_barrier(s: Stmt) -> bool:
    return any(isinstance(node, Barrier) for node in walk_stmt(s))


def _launch_extents(s: Stmt, into_blocks: bool) -> dict[str, Expr]:
    """Per thread tag, the block size: the largest constant extent of the tag's loops, or
    their common extent if all are the same expression (a tag without either is absent)."""
    extents: dict[str, list[Expr]] = {}
    stack = [s]
    while stack:
        node = stack.pop()
        if isinstance(node, For) and node.kind == "bound":
            if node.thread.startswith("blockIdx") and not into_blocks:
                continue
            if node.thread.startswith("threadIdx"):
                extents.setdefault(node.thread, []).append(node.extent)
        if isinstance(node, (For, Let, Allocate)):
            stack.append(node.body)
        elif isinstance(node, If):
            stack.extend(x for x in (node.then, node.otherwise) if x is not None)
        elif isinstance(node, Seq):
            stack.extend(node.stmts)
    sizes: dict[str, Expr] = {}
    for tag, found in extents.items():
        constants = [e for e in found if isinstance(e, Const)]
        if constants:
            sizes[tag] = max(constants, key=lambda c: c.value)
        elif all(_same(e, found[0]) for e in found):
            sizes[tag] = found[0]
    return sizes
