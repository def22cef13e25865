"""Pipelines of bulk copies (``pipeline(stages, tma=True)``): the copy engine fills each stage,
a producer thread of its own issues the copies, memory barriers order the roles.

A staged buffer refilled per iteration of a loop (`refill`) is kept in `stages` copies. The
block gains a producer thread: one more index along the outermost ``threadIdx`` the block uses
(its first thread; with warps along that index it is a warp of its own, which the others never
wait for). Each copy of the buffer has two barrier slots, ``full`` (one arrival, the
producer's, which expects the stage's bytes; the copies complete it as they land) and ``empty``
(one arrival per consumer thread, the threads of the block before the producer was added)::

    init full[s] (1 arrival), empty[s] (every consumer thread), by the producer; barrier()
    producer: for p < stages - 1: arrive(full[p], expect the stage's bytes); bulk_copy(p)
    for ko:
        consumers: wait(full[ko % stages], parity of its round)
        ... the reads of copy ko % stages ...
        consumers: if ko > start: arrive(empty[(ko - 1) % stages])
        producer: if ko + stages - 1 < end:
            wait(empty[(ko - 1) % stages], parity)  (not in the first round)
            arrive(full[...], expect the stage's bytes); bulk_copy(..., ko + stages - 1)

No block barrier stands in the loop: on a GPU the producer runs ahead, up to `stages` - 1
steps, and each consumer waits only for the stage it reads (warp specialisation). A step's
copy is released a step late, so that its warpgroup products (`wgmma`) may still be running
while the next step's wait and products are issued: the release waits for all groups of
products but the newest (``pending``).

Without warp specialisation (``warp_specialize=False``) the block's first thread issues the
copies, at the start of each step and before its own reads, and every thread releases a step's
copy at the end of that step, its products done::

    for ko:
        first thread: if ko + stages - 1 < end:
            wait(empty[(ko - 1) % stages], parity)  (not in the first round)
            arrive(full[...], expect the stage's bytes); bulk_copy(..., ko + stages - 1)
        every thread: wait(full[ko % stages], parity); ... reads ...; arrive(empty[ko % stages])

The first thread then waits only for the others to finish the step before its own, and its
warps run at most a step ahead of theirs: no producer warp takes registers, no block barrier
holds the warpgroups in step. Where the consumers are whole warps, a warp arrives once
(``per_warp``) rather than each of its threads.

The loop lists the roles in the order the interpreter runs them, an order that never waits on
hardware either. The fill of the buffer must copy one box of a global tensor into the whole
buffer, element for element: isl proves that its stores cover the buffer's box exactly and that
each reads the tensor at the same offset from where it writes (`poly.box_copy`); the box's
first element is then the copy's origin.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import LoweringError
from ...ir import dtype as dt
from ...ir.expr import Binary, Compare, Const, Expr, Select, Var, const
from ...poly.affine import NonAffine
from ...poly.box_copy import box_copy_mismatch, reads_beyond
from ..core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    BulkCopy,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    seq,
)
from ..core.simplify import simplify, simplify_expr
from ..core.visit import (
    path_to,
    substitute_expr,
    substitute_stmt,
    transform_stmt,
    walk_expr,
    walk_stmt,
)
from .fragments import is_wgmma
from .pipeline_steps import steps_of, tile_loop
from .refill import (
    copies_of,
    reads,
    refill_groups,
    replace_loop,
    retarget,
    split_body,
    writes,
)

TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
MAX_BOX = 256  # elements per dimension of one bulk copy
WARP = 32
# the kinds of the variables of the thread loops that pick each role's threads (`split_roles`)
PRODUCER, CONSUMER = "producer", "consumer"
ISSUER = "issuer"  # the block's first thread issuing the copies between its own work


@dataclass(frozen=True)
class _Box:
    """What a fill copies: `buffer` (the staged one) := the box of `src` at `origin`."""

    buffer: Buffer
    src: Buffer
    origin: tuple[Expr, ...]
    shape: tuple[int, ...]


def bulk_pipeline(stmt: Stmt, buffers: dict[Buffer, tuple[int, bool]]) -> Stmt:
    """`stmt` with each buffer of `buffers` (its number of stages, >= 2, and whether a
    producer warp issues its copies) filled by a pipeline of bulk copies (module doc); buffers
    refilled by one loop share one pipeline, with the most stages asked of them and a producer
    warp unless one of them asked for none."""
    remaining = list(buffers)
    while remaining:
        groups = refill_groups(stmt, remaining)
        if not groups:
            break  # filled once: a plain fill, nothing to overlap
        loop, group = groups[0]
        stages = max(buffers[b][0] for b in group)
        specialized = all(buffers[b][1] for b in group)
        stmt = _apply(stmt, loop, group, stages, specialized)
        remaining = [b for b in remaining if b not in group]
    return stmt


def _apply(stmt: Stmt, loop: For, group: list[Buffer], stages: int, specialized: bool) -> Stmt:
    call = f"pipeline(stages={stages}, tma=True{'' if specialized else ', warp_specialize=False'})"
    parts = split_body(loop, group, call)
    path = path_to(stmt, loop)
    around = [s for s in path if isinstance(s, For)]  # `loop` last
    defined = [(s.var, s.value) for s in path if isinstance(s, Let)]
    boxes = [_box_of(s, group, call, around, defined) for s in parts.fill]
    for b in group:
        if not any(box.buffer is b for box in boxes):  # pragma: no cover - split_body checks
            raise LoweringError(f"{call} of '{b.name}': its loop does not fill it")
    kernel = _kernel_of(stmt, loop)
    extents = _thread_extents(kernel)
    # warpgroups (products of 4 warps along y) keep their shape: the producer goes along z
    outer = 2 if any(is_wgmma(s) for s in walk_stmt(kernel)) else _outer_tag(extents)
    issuer = _Issuer(extents, outer, specialized)
    copies = {id(b): copies_of(b, stages) for b in group}
    v, lo, dtype = loop.var, loop.min, loop.var.dtype
    tile, around = tile_loop(stmt, loop)
    lets = around.lets
    name = group[0].name
    steps = steps_of(loop, tile, around, name)
    full = Buffer(f"{name}.full", (const(stages),), "int64", "shared")
    empty = Buffer(f"{name}.empty", (const(stages),), "int64", "shared")
    consumers = extents[0] * extents[1] * extents[2]
    per_warp = consumers % WARP == 0  # the consumers are whole warps: one arrival each
    nbytes = sum(_nbytes(box) for box in boxes)

    def num(n: int) -> Expr:
        return const(n, dtype)

    def slot(step: Expr) -> Expr:
        return simplify_expr(Binary("%", step, num(stages), dtype))

    def rounds(step: Expr) -> Expr:  # how many times the step's copy has been filled before
        return simplify_expr(Binary("//", step, num(stages), dtype))

    def fill(step: Expr, at: dict[Var, Expr]) -> Stmt:
        """The copies of global step `step`, the loop variables at `at`, once its stage is
        released (from the second round on)."""
        which = slot(step)
        released = MBarrier(
            "wait", empty, which, parity=_parity(Binary("-", rounds(step), num(1), dtype))
        )
        issued = [If(Compare(">=", step, num(stages)), released)]
        issued.append(MBarrier("arrive", full, which, nbytes))
        for box in boxes:
            origin = tuple(
                simplify_expr(substitute_expr(substitute_expr(o, lets), at)) for o in box.origin
            )
            dst = copies[id(box.buffer)]
            start = (which, *(num(0) for _ in box.shape))
            issued.append(BulkCopy(dst, start, box.src, origin, box.shape, full, which))
        return simplify(seq(*issued))

    inits = [MBarrier("init", full, num(k), 1) for k in range(stages)]
    releases = consumers // WARP if per_warp else consumers
    inits += [MBarrier("init", empty, num(k), releases) for k in range(stages)]
    prologue = [issuer.runs(seq(*inits)), Barrier(), *steps.reset]
    g = steps.here
    rest = seq(
        *(_widened(s, [(v, lo, loop.extent)], {id(b.buffer): b for b in boxes}) for s in parts.rest)
    )
    for b in group:
        rest = retarget(rest, b, copies[id(b)], slot(g))
    if specialized:
        # the previous step's copy is released once its products are done; this step's may
        # still run (one group of products in flight across the loop's turn)
        products = 1 if any(is_wgmma(s) for s in walk_stmt(rest)) else 0
        previous = simplify_expr(Binary("-", g, num(1), dtype))
        first = Compare(">", g, num(0))
        release = MBarrier(
            "arrive", empty, slot(previous), pending=products, when=first, per_warp=per_warp
        )
    else:
        # this step's copy, once its products are done: the issuing thread, a consumer too,
        # then waits at the start of a step only for the others to finish the step before
        release = MBarrier("arrive", empty, slot(g), per_warp=per_warp)
    consumed = _consumers(
        extents, outer, MBarrier("wait", full, slot(g), parity=_parity(rounds(g))), rest, release
    )
    issued = issuer.runs(steps.ahead(stages - 1, fill))
    # a producer warp refills after the step's reads (the interpreter's order); the block's
    # first thread before them, for the copy's sake: it has a step less to land
    body = seq(*parts.pre, *((consumed, issued) if specialized else (issued, consumed)))
    for wrapper in reversed(parts.wrappers):
        body = Allocate(wrapper.buffer, body)
    new_loop = For(v, lo, loop.extent, loop.kind, body, loop.thread)
    first_steps = issuer.runs(steps.first(stages - 1, fill))
    _check_not_restarted(stmt, tile or loop, loop, kernel, call)
    if tile is None:
        piped = seq(*prologue, first_steps, new_loop)
        where = loop
    else:
        # one pipeline across the tiles: the producer fills the next tile's first stages while
        # the consumers finish this one's
        inner = replace(tile, body=replace_loop(tile.body, loop, new_loop, {}))
        piped = seq(*prologue, steps.per_tile(inner, first_steps))
        where = tile
    for buffer in (*steps.buffers, empty, full):
        piped = Allocate(buffer, piped)
    return replace_loop(stmt, where, piped, copies)


def _check_not_restarted(stmt: Stmt, where: Stmt, loop: For, kernel: Stmt, call: str) -> None:
    """A `LoweringError` where a serial loop of the kernel holds the pipeline (set up at
    `where`, `loop` its steps): the pipeline would start again in every iteration, its
    barriers set up anew while threads of the last one may still wait on them, and its first
    copies would land where the last iteration's reads were released to no one."""
    inside = path_to(stmt, where)
    for s in inside[inside.index(kernel) + 1 : -1]:
        if isinstance(s, For) and s.kind == "serial":
            raise LoweringError(
                f"{call}: its loop {loop.var.name} runs inside the serial loop {s.var.name}, "
                "and the copy engine's pipeline counts its steps across the serial loop right "
                "around it only (through nothing but allocations, lets and guards), so it "
                f"would start again in every iteration of {s.var.name}, its barriers set up "
                "while threads may still wait on them; fuse the loops around "
                f"{loop.var.name} into one, or pipeline without tma"
            )


def _parity(rounds: Expr) -> Expr:
    return simplify_expr(Binary("%", rounds, const(2, rounds.dtype), rounds.dtype))


def _nbytes(box: _Box) -> int:
    count = 1
    for n in box.shape:
        count *= n
    return count * dt.bits(box.buffer.dtype) // 8


# -- products over whole steps -----------------------------------------------------------------


def _widened(s: Stmt, loops: list, boxes: dict[int, _Box]) -> Stmt:
    """`s` with each loop of warpgroup products that the end of the reduction cuts short
    (``min(c, e)`` iterations) run to its full ``c`` where isl proves that the iterations
    added read, of both operands, tiles that lie beyond the tensors along the reduction: the
    copy engine filled those with zeros, so their products add nothing, and the loop's extent
    is then a constant (its products unrolled, issued back to back) at every step instead of
    a bound computed per step."""
    if isinstance(s, For):
        inner = [*loops, (s.var, s.min, s.extent)]
        body = _widened(s.body, inner, boxes)
        wide = _constant_bound(s.extent)
        if (
            s.kind == "serial"
            and wide is not None
            and not isinstance(s.extent, Const)
            and _beyond(s, body, loops, wide, boxes)
        ):
            return For(s.var, s.min, wide, s.kind, body, s.thread)
        return s if body is s.body else replace(s, body=body)
    if isinstance(s, Seq):
        return seq(*(_widened(x, loops, boxes) for x in s.stmts))
    if isinstance(s, (Let, Allocate)):
        return replace(s, body=_widened(s.body, loops, boxes))
    return s


def _constant_bound(e: Expr) -> Const | None:
    """`e` with every ``min(c, x)`` of a constant ``c`` taken as ``c``, when that leaves a
    constant (the extent of a loop cut by the end of a range, at its largest)."""

    def cap(x: Expr) -> Expr:
        if isinstance(x, Binary) and x.op == "min":
            for side in (x.a, x.b):
                if isinstance(side, Const):
                    return side
        if isinstance(x, Binary):
            return Binary(x.op, cap(x.a), cap(x.b), x.dtype)
        return x

    capped = simplify_expr(cap(e))
    return capped if isinstance(capped, Const) else None


def _beyond(loop: For, body: Stmt, loops: list, wide: Const, boxes: dict[int, _Box]) -> bool:
    starts = []
    for s in walk_stmt(body):
        if isinstance(s, MatrixOp) and s.op == "mma" and is_wgmma(s):
            for tile, k in ((s.srcs[0], 1), (s.srcs[1], 0)):  # A's columns, B's rows
                box = boxes.get(id(tile.buffer))
                if box is None:
                    return False
                d = tile.dims[k]
                at = Binary("+", box.origin[d], tile.base[d], tile.base[d].dtype)
                starts.append((at, box.src.shape[d]))
        elif not isinstance(s, (Seq, For, If, Let)):
            return False
    if not starts:
        return False
    first = Binary("+", loop.min, loop.extent, loop.var.dtype)
    end = Binary("+", loop.min, wide, loop.var.dtype)
    try:
        return reads_beyond(loops, (loop.var, first, end), starts)
    except NonAffine:
        return False


# -- the threads of the roles -----------------------------------------------------------------


def _kernel_of(stmt: Stmt, loop: For) -> Stmt:
    """The statement that holds `loop` and is its kernel: the outermost loop bound to blockIdx
    around it, or all of `stmt` where there is none (one block)."""
    for s in path_to(stmt, loop):
        if isinstance(s, For) and s.kind == "bound" and s.thread.startswith("blockIdx"):
            return s
    return stmt


def _thread_extents(kernel: Stmt) -> tuple[int, int, int]:
    """The block's threads per tag: the largest constant extent bound to it (1 if none)."""
    sizes = dict.fromkeys(TAGS, 1)
    for s in walk_stmt(kernel):
        if isinstance(s, For) and s.kind == "bound" and s.thread in TAGS:
            if not isinstance(s.extent, Const):
                raise LoweringError(
                    f"pipeline(tma=True): loop {s.var.name} is bound to {s.thread} with a "
                    "symbolic extent; a block has a fixed number of threads, so split the axis "
                    "by a constant factor and bind the inner loop"
                )
            sizes[s.thread] = max(sizes[s.thread], int(s.extent.value))
    return sizes["threadIdx.x"], sizes["threadIdx.y"], sizes["threadIdx.z"]


def _outer_tag(extents: tuple[int, int, int]) -> int:
    """The outermost tag the block uses (x if it uses none): the producer's."""
    return max((k for k in range(3) if extents[k] > 1), default=0)


@dataclass(frozen=True)
class _Issuer:
    """The thread that issues the copies: a producer of its own, index ``extents[outer]`` of
    tag `outer` (one past the consumers) and 0 of the others, where `specialized`; else the
    block's first thread, a consumer too (its loops of another kind than the roles', so that
    `split_roles` leaves the step whole)."""

    extents: tuple[int, int, int]
    outer: int
    specialized: bool

    def runs(self, body: Stmt) -> Stmt:
        """`body` run by the issuing thread alone."""
        kind = PRODUCER if self.specialized else ISSUER
        for k in range(3):
            if k != self.outer and self.extents[k] == 1:
                continue
            var = Var(f"{TAGS[k]}.{kind}", "int32", kind)
            own = self.specialized and k == self.outer
            guarded = If(Compare("==", var, const(self.extents[k] if own else 0, "int32")), body)
            extent = self.extents[k] + 1 if own else self.extents[k]
            body = For(var, const(0, "int32"), const(extent, "int32"), "bound", guarded, TAGS[k])
        return body


def _consumers(
    extents: tuple[int, int, int], outer: int, wait: Stmt, reads: Stmt, release: Stmt
) -> Stmt:
    """The consumers' step: every consumer thread (each index below its extent before the
    producer) waits, reads, releases. One loop over tag `outer` holds the three, and the loops
    of `reads` over that tag (the same extent) are fused into it: each would be a guard of its
    own on a GPU (the block is one larger along it), and the tensor cores run a warpgroup's
    products in sequence only where no branch stands between them."""
    var = Var(f"{TAGS[outer]}.consumer", "int32", CONSUMER)

    def per_thread(s: Stmt) -> Stmt:
        for k in range(outer):
            if extents[k] > 1:
                lane = Var(f"{TAGS[k]}.consumer", "int32", CONSUMER)
                s = For(lane, const(0, "int32"), const(extents[k], "int32"), "bound", s, TAGS[k])
        return s

    def fused(s: Stmt) -> Stmt | None:
        if (
            isinstance(s, For)
            and s.kind == "bound"
            and s.thread == TAGS[outer]
            and isinstance(s.min, Const)
            and int(s.min.value) == 0
            and isinstance(s.extent, Const)
            and int(s.extent.value) == extents[outer]
        ):
            return substitute_stmt(s.body, {s.var: var})
        return None

    body = seq(per_thread(wait), transform_stmt(reads, fused), per_thread(release))
    return For(var, const(0, "int32"), const(extents[outer], "int32"), "bound", body, TAGS[outer])


# -- the box a fill copies --------------------------------------------------------------------


def _box_of(
    fill: Stmt, group: list[Buffer], call: str, around: list[For], defined: list[tuple]
) -> _Box:
    """The box `fill` copies, proven (module doc) for the iterations of the loops `around` it
    and the values of the lets `defined` there, or a `LoweringError` saying why not."""
    loops: list[For] = []
    lets: dict[Var, Expr] = {}
    guards: list[Expr] = []
    store = _store_of(fill, loops, lets, guards, call)
    buffer = next(b for b in group if b is store.buffer)
    value, when = _padded(substitute_expr(store.value, lets))
    if not isinstance(value, Load) or value.buffer.scope != "global":
        raise _error(
            buffer,
            call,
            "its fill does not copy an element of a tensor in global memory as it is (the copy "
            "engine moves bytes: no arithmetic or cast; zeros only where the read lies outside "
            "the tensor); stage a plain copy, or pipeline without tma",
        )
    src = value.buffer
    if value.dtype != buffer.dtype:
        raise _error(buffer, call, "its fill converts the values, which the copy engine cannot")
    shape = _constant_shape(buffer, call)
    if len(src.shape) != len(shape):
        raise _error(
            buffer,
            call,
            f"it has {len(shape)} dimensions and '{src.name}' {len(src.shape)}; the copy engine "
            "copies a box of the tensor's own dimensions",
        )
    if buffer.strides is not None or src.strides is not None:
        raise _error(
            buffer,
            call,
            "the copy engine writes boxes compact (or swizzled), not with storage_align's "
            "padding; swizzle the tile instead of padding its rows",
        )
    dst_idx = tuple(substitute_expr(i, lets) for i in store.indices)
    src_idx = tuple(substitute_expr(i, lets) for i in value.indices)
    first = {lp.var: lp.min for lp in loops}
    origin = tuple(
        simplify_expr(substitute_expr(Binary("-", _unclamped(s), d, s.dtype), first))
        for s, d in zip(src_idx, dst_idx)
    )
    bounds = [(lp.var, lp.min, lp.extent) for lp in loops]
    context = [(lp.var, lp.min, lp.extent) for lp in around]
    try:
        why = box_copy_mismatch(
            bounds, guards, dst_idx, src_idx, origin, src.shape, shape, when, context, defined
        )
    except NonAffine as err:
        raise _error(buffer, call, f"its fill's index or guard {err} is not affine") from None
    if why is not None:
        raise _error(buffer, call, why)
    _check_shape(buffer, shape, call)
    return _Box(buffer, src, origin, shape)


def _padded(value: Expr) -> tuple[Expr, Expr | None]:
    """The read of a fill's value and the condition under which it reads rather than pads with
    zeros (``if_then_else(cond, A[...], 0)``), or None."""
    if (
        isinstance(value, Select)
        and isinstance(value.false_value, Const)
        and float(value.false_value.value) == 0.0
    ):
        return value.true_value, value.cond
    return value, None


def _unclamped(e: Expr) -> Expr:
    """`e` with each ``min``/``max`` replaced by its first operand: the staging of a tile cut
    by the tensor's edge clamps its reads as ``min(index, last)``, reading the last element
    again past the edge, where the copy engine reads zeros instead. A guess, which `_prove`
    checks: inside the tensor both must read the same element."""
    if isinstance(e, Binary) and e.op in ("min", "max"):
        return _unclamped(e.a)
    if isinstance(e, Binary):
        return Binary(e.op, _unclamped(e.a), _unclamped(e.b), e.dtype)
    return e


def _store_of(
    s: Stmt, loops: list[For], lets: dict[Var, Expr], guards: list[Expr], call: str
) -> Store:
    """The one store of the fill `s`, collecting the loops, lets and guards around it."""
    while True:
        if isinstance(s, For):
            loops.append(s)
            s = s.body
        elif isinstance(s, Let):
            lets[s.var] = substitute_expr(s.value, lets)
            s = s.body
        elif isinstance(s, If) and s.otherwise is None:
            guards.append(substitute_expr(s.cond, lets))
            s = s.then
        elif isinstance(s, Store):
            return s
        else:
            raise LoweringError(
                f"{call}: the fill holds a {type(s).__name__} around its copy; the copy engine "
                "copies one box: stage a box of constant shape, copied by one loop nest"
            )


def _constant_shape(buffer: Buffer, call: str) -> tuple[int, ...]:
    if not all(isinstance(n, Const) for n in buffer.shape):
        raise _error(buffer, call, "its shape is not constant")
    return tuple(int(n.value) for n in buffer.shape)


def _check_shape(buffer: Buffer, shape: tuple[int, ...], call: str) -> None:
    item = dt.bits(buffer.dtype) // 8
    if any(n > MAX_BOX for n in shape):
        raise _error(
            buffer,
            call,
            f"its box {list(shape)} has a dimension over {MAX_BOX} elements, the most one bulk "
            "copy moves; split the tile smaller",
        )
    if shape[-1] * item % 16:
        raise _error(
            buffer,
            call,
            f"its rows are {shape[-1] * item} bytes, and the copy engine moves rows of a "
            "multiple of 16 bytes; widen the tile's last dimension",
        )


def _error(buffer: Buffer, call: str, why: str) -> LoweringError:
    return LoweringError(f"{call} of '{buffer.name}' fills it with bulk copies, but {why}")


def split_roles(stmt: Stmt) -> Stmt:
    """`stmt` with each pipelined loop whose body is nothing but the two roles' steps split in
    two loops, the producer's first (for a GPU only: the interpreter runs the roles in step).

    On a GPU the roles are different threads that meet only at their memory barriers, so each
    may run its own loop, inside the thread loops and guards that pick the role's threads
    (they do not depend on the loop). A thread of the other role passes a loop doing nothing,
    and the consumers' loop then holds no branch: ptxas keeps a warpgroup's products in flight
    only where no branch it cannot prove uniform stands between them. The producer's loop comes
    first so that no product is in flight across it. The buffers a step allocates (a step's
    register tiles: attention's scores and probabilities) are the consumers', allocated in
    each step of their loop; the producer's step never reads them.
    """

    def split(s: Stmt) -> Stmt | None:
        if not (isinstance(s, For) and s.kind == "serial"):
            return None
        allocations, body = [], s.body
        while isinstance(body, Allocate):
            allocations.append(body.buffer)
            body = body.body
        if not isinstance(body, Seq):
            return None
        roles = [_role(x) for x in body.stmts]
        if roles.count(PRODUCER) != 1 or roles.count(CONSUMER) != 1 or None in roles:
            return None
        produce, consume = (body.stmts[roles.index(r)] for r in (PRODUCER, CONSUMER))
        if any(reads(produce, b) or writes(produce, b) for b in allocations):
            return None
        own = Var(f"{s.var.name}.producer", s.var.dtype, s.var.kind)
        producer = _hoisted(s, substitute_stmt(produce, {s.var: own}), own)
        return seq(producer, _hoisted(s, consume, allocations=allocations))

    return transform_stmt(stmt, split)


def _hoisted(
    loop: For, region: Stmt, var: Var | None = None, allocations: list[Buffer] | None = None
) -> Stmt:
    """`loop` over `region` alone (inside `allocations`, made each step), with the thread
    loops and guards that open `region` (which do not depend on the loop) moved outside it."""
    var = loop.var if var is None else var
    if isinstance(region, For) and region.kind == "bound":
        return replace(region, body=_hoisted(loop, region.body, var, allocations))
    if isinstance(region, If) and region.otherwise is None and not _uses(region.cond, var):
        return If(region.cond, _hoisted(loop, region.then, var, allocations))
    for buffer in reversed(allocations or []):
        region = Allocate(buffer, region)
    return For(var, loop.min, loop.extent, loop.kind, region, loop.thread)


def _uses(e: Expr, var: Var) -> bool:
    return any(n is var for n in walk_expr(e))


def _role(s: Stmt) -> str | None:
    if isinstance(s, For) and s.kind == "bound" and s.var.kind in (PRODUCER, CONSUMER):
        return s.var.kind
    return None
