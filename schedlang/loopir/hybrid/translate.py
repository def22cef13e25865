"""A hybrid script's call (`schedlang.ir.hybrid`) as a loop-IR function of its own.

The script's statements are already loops, conditions and stores in program order, so this
is a translation, not a schedule: each tensor it touches becomes a buffer (inputs and outputs
the function's parameters, in that order; a one-element variable a ``local`` allocation, an
``allocate`` one of its scope), each read a `Load`. The outputs are first filled with zeros, as
the script's ``output_tensor`` gives them when it runs as Python, so that an element the
script leaves alone reads the same in both. ``assert`` statements are checked only when the
script runs as Python. An access the bounds check could not decide (`unchecked`: an index
read from a tensor, say) is kept inside its tensor: a read is clamped to the nearest element,
as a compute's data-dependent read is, and a store outside is not made.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from ...errors import LoweringError
from ...ir.data_index import clamp_index
from ...ir.expr import Const, Expr, Read, Var, const
from ...ir.hybrid.nodes import Check, Cond, HStmt, HybridCall, Local, Loop, Store
from ...ir.tensor import Operation
from ...ir.visit import children, rebuild, walk
from ...schedule.stage import Stage
from ..core.nodes import Allocate, Buffer, For, If, Load, LoweredFunc, Stmt, seq
from ..core.nodes import Store as BufferStore
from ..core.visit import stmt_exprs, walk_expr, walk_stmt
from .loops import perfect_chain, scheduled_nest


def lower_hybrid(
    call: HybridCall, stage: Stage, unchecked: frozenset[int], zero_fill: bool = True
) -> LoweredFunc:
    """The function computing `call`'s outputs, over its inputs then its outputs, with the
    loops as `stage` (the call's stage in a schedule) has them; `unchecked` are the ids of
    the `Store` and `Read` nodes to keep inside their tensors at run time. Without
    `zero_fill`, the caller fills the outputs with zeros first (on a GPU, where the threads
    of a kernel would race between the fill and the script)."""
    return _Translator(call, stage, unchecked).func(zero_fill)


def hybrid_params(call: HybridCall) -> tuple[Operation, ...]:
    """The ops of `lower_hybrid`'s parameters, in order."""
    return tuple(dict.fromkeys([*(t.op for t in call.inputs), *call.ops]))


class _Translator:
    def __init__(self, call: HybridCall, stage: Stage, unchecked: frozenset[int]) -> None:
        self.call = call
        self.stage = stage
        self.unchecked = unchecked
        self.values: dict[Var, Expr] = {}  # script loop variables -> their scheduled values
        self.buffers: dict[Operation, Buffer] = {}
        names: set[str] = set()
        for op in hybrid_params(call):
            name = op.name
            k = 1
            while name in names:
                name, k = f"{op.name}_{k}", k + 1
            names.add(name)
            self.buffers[op] = Buffer(name, op.shape, op.dtype)

    def func(self, zero_fill: bool) -> LoweredFunc:
        zeros = [self.zero_fill(self.buffers[op]) for op in self.call.ops] if zero_fill else []
        body = seq(*zeros, *self.block(self.call.body))
        params = tuple(self.buffers[op] for op in hybrid_params(self.call))
        # the sizes the arrays show, then those the script uses besides (passed by name)
        exprs = [d for b in params for d in b.shape]
        exprs += [e for s in walk_stmt(body) for e in stmt_exprs(s)]
        sizes = {v: None for e in exprs for v in walk_expr(e) if _is_size(v)}
        return LoweredFunc(self.call.name, params, tuple(sizes), body)

    def zero_fill(self, buffer: Buffer) -> Stmt:
        loops = [Var(f"{buffer.name}.z{k}", "int32", "loop") for k in range(len(buffer.shape))]
        body: Stmt = BufferStore(buffer, tuple(loops), const(0, buffer.dtype))
        for var, extent in reversed(list(zip(loops, buffer.shape))):
            body = For(var, const(0), extent, "serial", body)
        return body

    def block(self, stmts: tuple[HStmt, ...]) -> list[Stmt]:
        return [s for s in map(self.stmt, stmts) if s is not None]

    def stmt(self, s: HStmt) -> Stmt | None:
        if isinstance(s, Store):
            indices = self.exprs(s.indices)
            store = BufferStore(self.buffer(s.tensor.op), indices, self.expr(s.value))
            if id(s) not in self.unchecked:
                return store
            inside = [
                (i >= 0) & (i < self.expr(n))
                for i, n in zip(indices, s.tensor.shape)
                if not _known_inside(i, n)
            ]
            if not inside:
                return store
            return If(functools.reduce(lambda a, b: a & b, inside), store)
        if isinstance(s, Loop):
            return self.nest(s)
        if isinstance(s, Cond):
            otherwise = seq(*self.block(s.otherwise)) if s.otherwise else None
            return If(self.expr(s.cond), seq(*self.block(s.then)), otherwise)
        if isinstance(s, Local):
            op = s.tensor.op
            scope = "local" if s.scope == "local" else "global"
            self.buffers[op] = Buffer(op.name, op.shape, op.dtype, scope)
            return Allocate(self.buffers[op], seq(*self.block(s.body)))
        if isinstance(s, Check):
            return None
        raise TypeError(f"not a hybrid statement: {s!r}")

    def nest(self, loop: Loop) -> Stmt:
        chain = perfect_chain(loop)
        nest = scheduled_nest(self.stage, chain)
        nest = replace(nest, loops=_blocks_first(nest.loops))
        for loop in chain:  # outer first: an inner loop's bounds may use an outer variable
            self.values[loop.var] = self.expr(nest.values[loop.var])
        body = seq(*self.block(chain[-1].body))
        if nest.guards:
            cond = nest.guards[0]
            for guard in nest.guards[1:]:
                cond = cond & guard
            body = If(self.expr(cond), body)
        self.check_bounds(nest)
        for leaf in reversed(nest.loops):
            extent = self.expr(leaf.extent)
            body = For(leaf.var, const(0), extent, leaf.kind, body, leaf.thread)
        return body

    def check_bounds(self, nest) -> None:
        """Each loop's extent may use only the loops around it (a script's triangular loop
        cannot be reordered outside the loop its bound depends on)."""
        leaves = {leaf.var for leaf in nest.loops}
        outside: set[Var] = set()
        for leaf in nest.loops:
            inner = [v for v in walk(self.expr(leaf.extent)) if v in leaves - outside]
            if inner:
                raise LoweringError(
                    f"In schedule for '{self.stage.name}': the extent of loop '{leaf.var.name}' "
                    f"depends on '{inner[0].name}', which the schedule puts inside it; keep "
                    "the loop a bound depends on outside"
                )
            outside.add(leaf.var)

    def buffer(self, op: Operation) -> Buffer:
        buffer = self.buffers.get(op)
        if buffer is None:
            raise LoweringError(
                f"hybrid script '{self.call.name}' reads '{op.name}', which is not among its "
                "arguments; pass it as one"
            )
        return buffer

    def exprs(self, es: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(self.expr(e) for e in es)

    def expr(self, e: Expr) -> Expr:
        """`e` with reads as loads and the script's loop variables as their values. Top
        down: whether a read is kept inside its tensor is asked of the script's own node."""
        if isinstance(e, Read):
            indices = self.exprs(e.indices)
            if id(e) in self.unchecked:
                shape = [self.expr(n) for n in e.tensor.shape]
                indices = tuple(
                    i if _known_inside(i, n) else clamp_index(i, n) for i, n in zip(indices, shape)
                )
            return Load(self.buffer(e.tensor.op), indices, e.dtype)
        if isinstance(e, Var):
            return self.values.get(e, e)
        kids = children(e)
        new = tuple(self.expr(k) for k in kids)
        return e if all(n is k for n, k in zip(new, kids)) else rebuild(e, new)


def _is_size(e: Expr) -> bool:
    return isinstance(e, Var) and e.kind == "size"


def _known_inside(index: Expr, extent: Expr) -> bool:
    """A constant index inside a constant extent."""
    if isinstance(index, Const) and isinstance(extent, Const):
        return 0 <= int(index.value) < int(extent.value)
    return False


def _blocks_first(loops: tuple) -> tuple:
    """The loops of a nest with, in each run of adjacent loops bound to hardware indices, the
    blockIdx ones first: such loops are indices, not loops, so their order changes nothing,
    and a kernel's grid must enclose its threads (a script may bind ``blockIdx.x`` inside
    ``threadIdx.x``, as TE's allow). `check_bounds` then sees that no extent moved inside."""
    out: list = []
    run: list = []
    for leaf in (*loops, None):
        if leaf is not None and leaf.kind == "bound":
            run.append(leaf)
            continue
        out += sorted(run, key=lambda bound: not bound.thread.startswith("blockIdx"))
        run = []
        if leaf is not None:
            out.append(leaf)
    return tuple(out)
