"""A limit on the code that unrolling makes, checked before any copy is made.

Unrolling multiplies code: nested unrolled loops multiply their extents, and inside a vectorized
loop whose lanes do not form one vector (an access that is neither the same element for every
lane nor consecutive elements, or a lane count that is no power of two) each copy is emitted
lane by lane. LLVM's time grows faster than the code it is given: on the CPU target, a nest of
1024 unrolled statements builds in about 2 s, 2048 in 9 s, 4096 in 48 s (and to PTX 1.5 s and
4 s for 1024 and 2048). A nest that would make more than `MAX_UNROLLED` statements is refused
here, by the loops the user unrolled, before the loop IR copies them or LLVM meets them (on the
cuda target, unrolled loops that index no register reach LLVM as loops, hinted to be unrolled:
they count the same).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...ir.expr import Const, Expr, Var, binary, const
from ...schedule import records as rec
from ...schedule.axis import Axis
from ...schedule.errors import UnrollSizeError, message
from ...schedule.schedule import Schedule
from ..core.nodes import Buffer, For, Load, Stmt, Store
from ..core.simplify import simplify_expr
from ..core.visit import stmt_children, stmt_exprs, substitute_expr, walk_expr, walk_stmt

MAX_UNROLLED = 1024  # statements one unrolled nest may make (copies x lanes emitted one by one)
_MAX_LANES = 64  # a vectorized loop wider than this runs as a loop (`codegen.lanes`)


@dataclass(frozen=True)
class _Size:
    """How many statements a piece of loop IR becomes, and the factors of its costliest path:
    the unrolled loops and the vectorized loops emitted lane by lane, outermost first."""

    statements: int
    path: tuple[For, ...] = ()


def check_unroll_size(s: Schedule, body: Stmt) -> None:
    """Raise `UnrollSizeError` for the first nest of loops marked ``unrolled`` in `body` (the
    loop IR before `unroll_loops`) that would make more than `MAX_UNROLLED` statements,
    counting the lanes of a vectorized loop around or inside it that is emitted lane by lane.

    The loops a GPU target unrolls by itself to keep a register tile in registers
    (`mark_register_loops`) are not counted: they are bounded there, and code on registers is
    cheap for LLVM (a GEMM whose unrolled k loop holds 12288 register statements builds to PTX
    in 2 s)."""
    for root, lanes in _roots(body, ()):
        size = _size(root)
        total = size.statements * _lane_product(lanes)
        if total > MAX_UNROLLED:
            raise UnrollSizeError(_message(s, root, lanes + size.path, total))


def _lane_product(lanes: tuple[For, ...]) -> int:
    product = 1
    for loop in lanes:
        product *= _extent(loop)
    return product


def _roots(s: Stmt, lanes: tuple[For, ...]):
    """The outermost unrolled loops of `s`, each with the lane-by-lane vectorized loops around
    it."""
    if isinstance(s, For) and s.kind == "unrolled":
        yield s, lanes
        return
    if isinstance(s, For) and s.kind == "vectorized" and _lane_by_lane(s):
        lanes = (*lanes, s)
    for child in stmt_children(s):
        yield from _roots(child, lanes)


def _size(s: Stmt) -> _Size:
    kids = stmt_children(s)
    if not kids:
        return _Size(1)
    sizes = [_size(k) for k in kids]
    total = sum(k.statements for k in sizes)
    path = max(sizes, key=lambda k: k.statements).path
    if isinstance(s, For) and (s.kind == "unrolled" or _lane_by_lane(s)):
        return _Size(total * _extent(s), (s, *path))
    return _Size(total, path)


def _extent(loop: For) -> int:
    """The loop's constant extent; 1 where it is not yet a constant (an inner loop whose
    extent depends on an outer unrolled variable is counted once)."""
    extent = simplify_expr(loop.extent)
    return max(int(extent.value), 1) if isinstance(extent, Const) else 1


def _lane_by_lane(loop: For) -> bool:
    """Whether a vectorized loop is emitted one lane at a time: its lanes are a constant count
    of at most 64 (else it runs as a loop) and not a power of two, or one of its accesses is a
    gather. A loop whose body holds a loop the unrolling leaves runs as a loop."""
    if loop.kind != "vectorized" or not isinstance(loop.extent, Const):
        return False
    lanes = int(loop.extent.value)
    if not 1 < lanes <= _MAX_LANES:
        return False
    inner = [x for x in walk_stmt(loop.body) if isinstance(x, For)]
    if any(x.kind != "unrolled" for x in inner):
        return False
    if lanes & (lanes - 1):
        return True
    return any(not _vector_access(b, ix, loop.var) for b, ix in _accesses(loop.body))


def _accesses(body: Stmt):
    """(buffer, indices) of every load and store in `body`."""
    for s in walk_stmt(body):
        if isinstance(s, Store):
            yield s.buffer, s.indices
        for e in stmt_exprs(s):
            for node in walk_expr(e):
                if isinstance(node, Load):
                    yield node.buffer, node.indices


def _vector_access(buffer: Buffer, indices: tuple[Expr, ...], lane: Var) -> bool:
    """The same element for every lane, or consecutive elements of a compact last dimension."""
    moving = [k for k, ix in enumerate(indices) if _mentions(ix, lane)]
    if not moving:
        return True
    last = len(indices) - 1
    compact = buffer.strides is None or _is(buffer.strides[-1], 1)
    if moving != [last] or not compact:
        return False
    index = indices[last]
    step = substitute_expr(index, {lane: binary("+", lane, const(1, lane.dtype))})
    return _is(simplify_expr(binary("-", step, index)), 1)


def _mentions(e: Expr, var: Var) -> bool:
    return any(node is var for node in walk_expr(e))


def _is(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and e.value == value


def _message(s: Schedule, root: For, path: tuple[For, ...], total: int) -> str:
    stage, axis = _owner(s, root)
    loc = "" if axis is None else s.record_for(rec.Annotate, axis).loc
    name = axis.name if axis is not None else root.var.name
    axes = {axis.name for stage in s.stages for axis in stage.extents}
    factors = " x ".join(_factor(loop, axes) for loop in path)
    product = _lane_product(path)
    per_copy = total // product
    statements = f"{per_copy} statement{'s' if per_copy != 1 else ''}"
    inner = total // _extent(root)
    split = 1  # the largest power of two that keeps the nest within the limit
    while 2 * split * inner <= MAX_UNROLLED:
        split *= 2
    advice = (
        f"split '{name}' and unroll only its inner part (e.g. split({name}, factor={split}), "
        f"then unroll({name}.inner)), or leave it a loop"
        if split > 1
        else "unroll fewer of these loops (leave the outer ones loops), or split them and "
        "unroll only their inner parts"
    )
    return message(
        stage,
        f"unroll({name})",
        loc,
        f"unrolling makes {factors} = {product} copies of {statements}, {total} statements "
        f"in all, above the limit of {MAX_UNROLLED} for one unrolled nest (LLVM's compile time "
        f"grows faster than the code); {advice}",
    )


def _factor(loop: For, axes: set[str]) -> str:
    name = _axis_name(loop.var.name, axes)
    if loop.kind == "unrolled":
        return f"{name} ({_extent(loop)})"
    return f"{_extent(loop)} lanes of {name} (vectorized, emitted lane by lane)"


def _axis_name(name: str, axes: set[str]) -> str:
    """The schedule's name of a loop: lowering suffixes ``_1``, ``_2`` to names used twice."""
    base = re.sub(r"_\d+$", "", name)
    return base if name not in axes and base in axes else name


def _owner(s: Schedule, root: For) -> tuple[str, Axis | None]:
    """The stage and axis the user unrolled that became `root`: an unrolled axis of that
    name (the lowering suffixes ``_1``, ``_2`` to names used twice) of a stage `root` stores
    to, or of any stage."""
    stored = [x.buffer.name for x in walk_stmt(root) if isinstance(x, Store)]
    names = (root.var.name, re.sub(r"_\d+$", "", root.var.name))
    found = [
        (stage.name, axis)
        for stage in s.stages
        for axis, kind in stage.annotations.items()
        if kind == "unrolled" and axis.name in names
    ]
    found.sort(key=lambda pair: (pair[0] not in stored, names.index(pair[1].name)))
    if found:
        return found[0]
    return (stored[0] if stored else "?"), None
