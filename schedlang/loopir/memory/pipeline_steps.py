"""How a copy-engine pipeline (`bulk_pipeline`) numbers its steps: the iterations of the
refilled loop, and where a persistent block's serial loop over tiles holds it, the iterations
of every tile in turn, so that the pipeline runs across the tiles (its barriers set up once,
a tile's last steps filling the next tile's first stages). The stage and the barrier phase
of a step follow from its number.

Where every tile takes the same steps the number is ``tile * steps + step`` (`Steps`); where
the steps change with the tile (a causal mask's diagonals, a guard around the loop), each
thread counts the steps taken in a register (`RunningSteps`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ...ir.expr import Binary, Compare, Expr, Select, Unary, Var, const
from ..core.nodes import Allocate, Buffer, For, If, Let, Load, Seq, Stmt, Store, seq
from ..core.simplify import simplify_expr
from ..core.visit import path_to, substitute_expr, walk_expr

Fill = Callable[[Expr, dict[Var, Expr]], Stmt]  # the copies of a step, the loop variables there


def steps_of(loop: For, tile: For | None, around: Around, name: str) -> Steps | RunningSteps:
    """How the pipeline numbers the steps of `loop`, held by `tile` (or by none)."""
    if tile is None:
        return Steps(loop, None)
    varies = any(n is tile.var or n in around.lets for n in walk_expr(loop.extent))
    if varies or around.guards:
        base = Var(f"{name}.base", loop.var.dtype, "let")
        counter = Buffer(f"{name}.steps", (const(1),), loop.var.dtype, "local")
        return RunningSteps(loop, tile, around, base, counter)
    return Steps(loop, tile)


@dataclass(frozen=True)
class Steps:
    """The pipeline's steps: the iterations of the refill loop, numbered from 0, and where a
    serial loop over tiles holds it (a persistent block's) and the loop takes the same steps
    in every tile, those of every tile in turn."""

    loop: For
    tile: For | None
    reset: tuple[Stmt, ...] = ()
    buffers: tuple[Buffer, ...] = ()

    @property
    def count(self) -> Expr:
        extent = self.loop.extent
        if self.tile is None:
            return extent
        return simplify_expr(Binary("*", self.tile.extent, extent, extent.dtype))

    @property
    def here(self) -> Expr:
        """The step of the current iteration."""
        v, lo = self.loop.var, self.loop.min
        step = Binary("-", v, lo, v.dtype)
        if self.tile is not None:
            u = self.tile
            done = Binary("*", Binary("-", u.var, u.min, v.dtype), self.loop.extent, v.dtype)
            step = Binary("+", done, step, v.dtype)
        return simplify_expr(step)

    def point(self, step: Expr) -> dict[Var, Expr]:
        """The loop variables at `step`."""
        v, lo, extent = self.loop.var, self.loop.min, self.loop.extent
        if self.tile is None:
            return {v: simplify_expr(Binary("+", lo, step, v.dtype))}
        u = self.tile
        return {
            v: simplify_expr(Binary("+", lo, Binary("%", step, extent, v.dtype), v.dtype)),
            u.var: simplify_expr(Binary("+", u.min, Binary("//", step, extent, v.dtype), v.dtype)),
        }

    def ahead(self, n: int, fill: Fill) -> Stmt:
        """In the loop: the fill of the step `n` ahead of this one, if there is one."""
        step = simplify_expr(Binary("+", self.here, const(n, self.here.dtype), self.here.dtype))
        return If(Compare("<", step, self.count), fill(step, self.point(step)))

    def first(self, n: int, fill: Fill) -> Stmt:
        """Before the loop: the fills of the first `n` steps."""
        dtype = self.loop.var.dtype
        return seq(
            *(
                If(
                    Compare("<", const(p, dtype), self.count),
                    fill(const(p, dtype), self.point(const(p, dtype))),
                )
                for p in range(n)
            )
        )

    def per_tile(self, tiles: For, first: Stmt) -> Stmt:
        """`tiles` (the loop over tiles), the first fills before it: the pipeline's steps
        run across the tiles as one sequence."""
        return seq(first, tiles)


@dataclass(frozen=True)
class RunningSteps:
    """The steps of a refill loop whose number changes with the serial loop over tiles around
    it (a persistent block's tiles under a causal mask, or guarded: a tile past a symbolic
    size's end has none): numbered across the tiles by a count
    of the steps taken, kept in a register (`counter`) and read at the start of each tile
    (`base`). A tile's steps fill the next tile's first ones; the tile fills itself those its
    predecessor could not reach (all of them after a tile of no steps)."""

    loop: For
    tile: For
    around: Around
    base: Var
    counter: Buffer

    @property
    def reset(self) -> tuple[Stmt, ...]:
        return (Store(self.counter, (const(0),), const(0, self.base.dtype)),)

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        return (self.counter,)

    def _at(self, e: Expr, u: Expr) -> Expr:
        lets = self.around.lets
        return simplify_expr(substitute_expr(substitute_expr(e, lets), {self.tile.var: u}))

    def _extent(self, u: Expr) -> Expr:
        """The steps of tile `u`: none where a guard around the loop is false."""
        zero = const(0, self.base.dtype)
        steps: Expr = Binary("max", self._at(self.loop.extent, u), zero, zero.dtype)
        for guard in self.around.guards:
            steps = Select(self._at(guard, u), steps, zero, zero.dtype)
        return simplify_expr(steps)

    def _next(self, k: int) -> Expr:
        u = self.tile.var
        return simplify_expr(Binary("+", u, const(k, u.dtype), u.dtype))

    def _point(self, u: Expr, local: Expr) -> dict[Var, Expr]:
        lo = self._at(self.loop.min, u)
        return {self.loop.var: simplify_expr(Binary("+", lo, local, lo.dtype)), self.tile.var: u}

    def _step(self, local: Expr) -> Expr:
        return simplify_expr(Binary("+", self.base, local, self.base.dtype))

    @property
    def here(self) -> Expr:
        v, lo = self.loop.var, self.loop.min
        return self._step(Binary("-", v, lo, v.dtype))

    def ahead(self, n: int, fill: Fill) -> Stmt:
        """In the loop: the fill of the local step `n` ahead, in this tile or the next."""
        v, lo, dtype = self.loop.var, self.loop.min, self.base.dtype
        local = simplify_expr(Binary("+", Binary("-", v, lo, dtype), const(n, dtype), dtype))
        here = self._extent(self.tile.var)
        later = simplify_expr(Binary("-", local, here, dtype))
        u = self.tile
        nxt = self._next(1)
        exists = Compare("<", nxt, Binary("+", u.min, u.extent, dtype))
        fits = Compare("<", later, self._extent(nxt))
        next_tile = If(
            Binary("and", exists, fits, "bool"), fill(self._step(local), self._point(nxt, later))
        )
        return If(
            Compare("<", local, here),
            fill(self._step(local), self._point(u.var, local)),
            next_tile,
        )

    def first(self, n: int, fill: Fill) -> Stmt:
        """At the start of a tile: the fills of its first `n` steps that the tile before did
        not issue (those below `n` minus its steps)."""
        u, dtype = self.tile, self.base.dtype
        earlier = self._extent(self._next(-1))
        issued = []
        for p in range(n):
            at = const(p, dtype)
            missed = Binary(
                "or",
                Compare("==", u.var, u.min),
                Compare("<", Binary("+", at, earlier, dtype), const(n, dtype)),
                "bool",
            )
            cond = Binary("and", Compare("<", at, self._extent(u.var)), missed, "bool")
            issued.append(If(cond, fill(self._step(at), self._point(u.var, at))))
        return seq(*issued)

    def per_tile(self, tiles: For, first: Stmt) -> Stmt:
        """The loop over tiles, each tile reading the steps taken before it, filling its first
        steps, and counting its own at its end."""
        taken = Binary("+", self.base, self._extent(self.tile.var), self.base.dtype)
        counted = Store(self.counter, (const(0),), simplify_expr(taken))
        body = Let(
            self.base,
            Load(self.counter, (const(0),), self.base.dtype),
            seq(first, tiles.body, counted),
        )
        return replace(tiles, body=body)


@dataclass(frozen=True)
class Around:
    """What stands between the serial loop over tiles and the refill loop: the lets (their
    values in terms of the tile loop's variable) and the guards (true where the tile runs
    the loop at all)."""

    lets: dict[Var, Expr]
    guards: tuple[Expr, ...] = ()


def tile_loop(stmt: Stmt, loop: For) -> tuple[For | None, Around]:
    """The serial loop right around `loop` (through allocations, lets and guards only), with
    what stands between; None where there is none."""
    path = path_to(stmt, loop)
    between: list[Stmt] = []
    for s, inner in zip(reversed(path[:-1]), reversed(path[1:])):
        if isinstance(s, For) and s.kind == "serial":
            lets: dict[Var, Expr] = {}
            guards = []
            for node, kid in reversed(between):  # outermost first
                if isinstance(node, Let):
                    lets[node.var] = substitute_expr(node.value, lets)
                else:
                    cond = substitute_expr(node.cond, lets)
                    guards.append(cond if kid is node.then else Unary("not", cond, "bool"))
            return s, Around(lets, tuple(guards))
        if isinstance(s, (Let, If)):
            between.append((s, inner))
        elif not isinstance(s, (Seq, Allocate)):
            return None, Around({})
    return None, Around({})
