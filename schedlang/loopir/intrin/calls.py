"""The calls that replace one tile of a stage tensorized with a declared intrinsic
(`schedule.user_intrin`, planned by `poly.user_tensorize`).

At the tile's first instance (its tile loops at 0) the stage's loads and store name the first
element of each tile: those are the addresses the function gets, paired with the intrinsic's
buffers as its reads were paired with the stage's. A buffer's symbolic strides become the
strides of the tensor dimensions its dimensions lie along; its constant strides must be those
(but for a registered Python function's, handed each tile as a view with the tensor's strides).
Which calls run is the plan's: the body (or, at a reduction's first step without a reset, the
body and later the update), the reset at the reduction's init.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...ir.expr import Binary, Cast, Const, Expr, Var, logical
from ...ir.printer import expr_str
from ...ir.visit import children, substitute
from ...schedule.user_intrin import ExternCall, Pointer, UserIntrin
from ..core.nodes import Buffer, CallExtern, If, Load, PackedSite, Stmt, seq
from ..core.visit import walk_expr

if TYPE_CHECKING:
    from ...poly.tensorize import TensorPlan


def intrinsic_calls(
    plan: TensorPlan, role: str, value: Expr, store: Load, firsts: list[Expr]
) -> Stmt:
    """The calls for one tile: `value` is the statement's lowered value (its loads at the
    tile's first element), `store` the element it stores to, `firsts` the conditions that
    this is the reduction's first step (each reduce index at its first value)."""
    call = plan.call
    intrin: UserIntrin = call.intrin
    kind = plan.ops[role]
    where: dict[int, tuple[Load, tuple[int, ...]]] = {}
    declared = intrin.op
    ins = declared.input_tensors
    if role != "init":  # a reset touches the output only
        for (theirs, dims), load in zip(call.reads, _loads(value)):
            slot = next(j for j, t in enumerate(ins) if t.op is theirs)
            seen = where.setdefault(slot, (load, dims))[0]
            if [expr_str(i) for i in seen.indices] != [expr_str(i) for i in load.indices]:
                raise call.fail(
                    f"'{theirs.name}' is read twice, as {expr_str(seen)} and "
                    f"{expr_str(load)}, two tiles for the one buffer the function gets; declare "
                    "one input per tile"
                )
    where[len(ins)] = (store, call.dst_dims)
    ops = [*[t.op for t in ins], declared]
    bound = {ops.index(op): buffer for op, buffer in intrin.buffers.items()}
    strides: dict[Var, Expr] = {}
    # a packed call's function is handed views with the tensor's strides, whatever the
    # buffers declare; a C function relies on the declared ones
    exact = not all(c.packed for c in (*intrin.body, *intrin.reset, *intrin.update))
    for slot, (load, dims) in where.items():
        _strides(bound[slot], load.buffer, dims, strides, call.fail, exact)
    pointers = {id(bound[slot]): load for slot, (load, _) in where.items()}
    views = {
        id(bound[slot]): _view_strides(load.buffer, dims) for slot, (load, dims) in where.items()
    }

    def made(calls: tuple[ExternCall, ...]) -> Stmt:
        return seq(*(_extern(c, pointers, strides, views, call.fail) for c in calls))

    if kind == "body":
        return made(intrin.body)
    if kind == "reset":
        return made(intrin.reset)
    if intrin.reset or not firsts:  # kind == "update"
        return made(intrin.update)
    return If(logical("and", tuple(firsts)), made(intrin.body), made(intrin.update))


def _loads(e: Expr):
    """The loads of `e` in the order the intrinsic's reads were paired (pre-order), not
    looking into their indices."""
    if isinstance(e, Load):
        yield e
        return
    for child in children(e):
        yield from _loads(child)


def _strides(decl, buffer: Buffer, dims, strides: dict, fail: Callable, exact: bool) -> None:
    actual = _buffer_strides(buffer)
    for d, stride in enumerate(decl.strides):
        dim = dims[d] if d < len(dims) else -1
        if dim < 0:
            continue
        have = actual[dim]
        if isinstance(stride, Var):
            if stride in strides and expr_str(strides[stride]) != expr_str(have):
                raise fail(
                    f"the stride '{stride.name}' is {expr_str(strides[stride])} "
                    f"in one buffer and {expr_str(have)} in '{decl.name}'; give each buffer a "
                    "stride variable of its own"
                )
            strides[stride] = have
        elif exact and not (isinstance(have, Const) and have.value == stride):
            raise fail(
                f"the buffer '{decl.name}' has stride {stride} along its "
                f"dimension {d}, but '{buffer.name}' has stride {expr_str(have)} there; declare "
                "the stride as a variable (sl.var) to take the tensor's"
            )


def _buffer_strides(buffer: Buffer) -> list[Expr]:
    """The element strides of `buffer`'s dimensions (row-major unless it has strides)."""
    if buffer.strides is not None:
        return list(buffer.strides)
    out: list[Expr] = []
    step: Expr = Const(1, "int64")
    for n in reversed(buffer.shape):
        out.append(step)
        if isinstance(step, Const) and isinstance(n, Const):
            step = Const(step.value * n.value, "int64")
        else:
            step = Binary("*", step, n if n.dtype == "int64" else Cast(n, "int64"), "int64")
    return out[::-1]


def _view_strides(buffer: Buffer, dims: tuple[int, ...]) -> tuple[Expr, ...]:
    """Per dimension of an intrinsic's buffer, the stride (in elements) of the tensor
    dimension it lies along; 0 where it lies along none."""
    actual = _buffer_strides(buffer)
    return tuple(Const(0, "int64") if d < 0 else _int64(actual[d]) for d in dims)


def _int64(e: Expr) -> Expr:
    return e if e.dtype == "int64" else Cast(e, "int64")


def _extern(
    c: ExternCall, pointers: dict, strides: dict, views: dict, fail: Callable
) -> CallExtern:
    """The C call of `c`; a packed call's arrays are each an address then the strides of
    the tile's view (`PackedSite`)."""
    args, modes, arrays = [], [], []
    for a in c.args:
        if isinstance(a, Pointer):
            load = pointers.get(id(a.buffer))
            if load is None:
                raise fail(f"'{a.buffer.name}' passed to {c.name} is not a buffer of the intrinsic")
            args.append(load)
            modes.append(a.mode)
            if c.packed:
                shape = tuple(int(n) for n in a.buffer.shape)
                arrays.append((shape, a.buffer.dtype))
                args += views[id(a.buffer)]
                modes += [None] * len(shape)
            continue
        value = substitute(a, strides)
        free = [n for n in walk_expr(value) if isinstance(n, Var)]
        if free:
            raise fail(
                f"the argument '{a}' of {c.name} uses '{free[0].name}', which is "
                "no stride of the intrinsic's buffers"
            )
        if c.packed:
            args.append(_int64(value))
            arrays.append(None)
        else:
            args.append(value if value.dtype == "int32" else Cast(value, "int32"))
        modes.append(None)
    if not c.packed:
        return CallExtern(c.name, tuple(args), tuple(modes))
    site = PackedSite(c.name, tuple(arrays))
    return CallExtern(site.symbol, tuple(args), tuple(modes), site)
