"""Consumer warpgroups taking turns at the tensor cores (FlashAttention 3's "pingpong").

Two consumer warpgroups that run the same steps meet at the tensor cores at the same time and
then do their softmax at the same time, with the tensor cores idle. Ordered, one warpgroup's
products run while the other computes its softmax: each run of products is a turn, taken
before its first product (``bar.sync`` on the warpgroup's own named barrier) and given to the
next warpgroup after its last has been issued (``bar.arrive`` on that one's barrier, which
does not wait). The products keep running after the turn is given; only their issue is
ordered.

A run is what lies between the first and the last product of a sequence of statements, up to
a statement that reads what a product of the run wrote (it would wait for the product inside
the turn: a step's softmax after its scores) or that may wait for the other warpgroup or the
producer (a barrier, a collective, a memory barrier's wait: held in a turn, such a wait could
wait for the turn itself); a loop or a test holding products among other work holds turns of
its own. The warpgroups take the same turns in the same order, so the turns go round the ring:
before any, the last warpgroup gives the first turn to the first, and after all, the first
warpgroup takes the turn the last gave, so that every wait has its arrival and no arrival
outlives the block. Where a test on the warpgroup's index leaves one out (an edge block whose
rows leave the second warpgroup nothing), the turns under the test are taken only where every
warpgroup takes the same side of it, so that neither waits for a turn the other never gives.

The roles must have parted (`register_handover`): the consumers' code is then one branch, in
which these turns are placed; ``pragma(step, "take_turns")`` asks for it on a scan's step
axis (`examples/gpu_attention.wgmma_schedule(..., turns=True)`).
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from ...ir.expr import Compare, Expr, Unary, Var, const, logical
from ..core.nodes import (
    Allocate,
    AsyncCopy,
    Barrier,
    Buffer,
    BulkCopy,
    For,
    If,
    Let,
    MBarrier,
    Seq,
    SetRegisters,
    Stmt,
    ThreadAllReduce,
    Turn,
)
from ..core.simplify import simplify_expr
from ..core.visit import substitute_expr, transform_stmt, walk_expr, walk_stmt
from ..memory.fragments import is_wgmma
from ..memory.refill import reads

_CONTAINERS = (Seq, For, If, Let, Allocate)
_WAITS = (Barrier, MBarrier, ThreadAllReduce, AsyncCopy, BulkCopy)


def take_turns(body: Stmt, what: str) -> Stmt:
    """`body` (a kernel's, its roles parted) with its consumer warpgroups taking turns at
    their products; `what` names the pragma and its stage for a refusal."""
    parting = _parting(body)
    if parting is None:
        raise LoweringError(
            f"{what}: the consumer warpgroups take turns once the producer warpgroup has gone "
            "its own way for good after the kernel's last block barrier, and here the roles "
            "meet again at a barrier in a loop around the producer's (persistent blocks' "
            "tiles, each filling its stages anew); take turns with a block a tile"
        )
    role, consume = parting
    warpgroups = int(role.extent.value) - 1
    if warpgroups < 2 or not any(is_wgmma(s) for s in walk_stmt(consume.otherwise)):
        raise LoweringError(
            f"{what}: the consumers are {warpgroups} warpgroup(s) with "
            f"{'no products' if warpgroups > 1 else 'no other to take turns with'}; turns are "
            "taken by two or more warpgroups at their warpgroup products"
        )
    z = role.var
    turned = _Turns(z, warpgroups, what).turns(consume.otherwise, None)
    last = const(warpgroups - 1, z.dtype)
    first = If(Compare("==", z, last), Turn(True, warpgroups))
    final = If(Compare("==", z, const(0, z.dtype)), Turn(False, warpgroups))
    opened = replace(consume, otherwise=_opened(turned, first, final))
    return transform_stmt(body, lambda s: opened if s is consume else None)


def _parting(body: Stmt) -> tuple[For, If] | None:
    """The loop over the roles' warpgroups and its test (`register_handover._parted`)."""
    for s in walk_stmt(body):
        if not (isinstance(s, For) and s.kind == "bound" and isinstance(s.body, If)):
            continue
        test = s.body
        arm = test.otherwise
        if isinstance(arm, Seq) and arm.stmts and isinstance(arm.stmts[0], SetRegisters):
            return s, test
    return None


def _opened(consumers: Stmt, first: Stmt, final: Stmt) -> Stmt:
    """The consumers' branch (its registers taken first) with the first turn given before
    its statements and the last taken after them."""
    assert isinstance(consumers, Seq) and isinstance(consumers.stmts[0], SetRegisters)
    take, *rest = consumers.stmts
    return Seq((take, first, *rest, final))


class _Turns:
    """The runs of one kernel's consumers made turns (module doc)."""

    def __init__(self, z: Var, warpgroups: int, what: str) -> None:
        self.z = z
        self.warpgroups = warpgroups
        self.what = what

    def turns(self, s: Stmt, when: Expr | None) -> Stmt:
        """`s` with each run of products a turn, taken only `when` (None: always)."""
        z = self.z
        if not _holds_products(s):
            return s
        if isinstance(s, For) and _depends_on(s, z):
            raise LoweringError(
                f"{self.what}: products in a loop whose bounds depend on the warpgroup's index: "
                "the warpgroups would not take as many turns, and one would wait for a turn "
                "never given"
            )
        if isinstance(s, If) and _depends_on(s, z):
            # its turns are taken where every warpgroup takes the same side (an edge block
            # whose rows leave a warpgroup nothing runs it without turns)
            each = range(self.warpgroups)
            sides = [simplify_expr(substitute_expr(s.cond, {z: const(k, z.dtype)})) for k in each]
            then = self.turns(s.then, _both(when, logical("and", tuple(sides))))
            if s.otherwise is None:
                return If(s.cond, then)
            none = logical("and", tuple(Unary("not", c, "bool") for c in sides))
            return If(s.cond, then, self.turns(s.otherwise, _both(when, none)))
        if _products_only(s):
            return Seq(self.turn([s], when))
        if isinstance(s, Seq):
            return Seq(tuple(self.in_runs(s.stmts, when)))
        if isinstance(s, If):
            otherwise = None if s.otherwise is None else self.turns(s.otherwise, when)
            return If(s.cond, self.turns(s.then, when), otherwise)
        if isinstance(s, (For, Let, Allocate)):
            return replace(s, body=self.turns(s.body, when))
        return s

    def in_runs(self, stmts: tuple[Stmt, ...], when: Expr | None) -> list[Stmt]:
        """`stmts` with their runs of products turns, and what holds products among other
        work given turns of its own."""
        out: list[Stmt] = []
        run: list[Stmt] = []  # from the run's first product on
        written: dict[int, Buffer] = {}  # the registers the run's products write
        for s in stmts:
            if _products_only(s):
                run.append(s)
                written |= {id(n.dst.buffer): n.dst.buffer for n in walk_stmt(s) if is_wgmma(n)}
                continue
            if run and (_holds_products(s) or _waits(s) or _reads(s, written)):
                out.extend(self.turn(run, when))
                run, written = [], {}
            if run:
                run.append(s)
            else:
                out.append(self.turns(s, when))
        out.extend(self.turn(run, when))
        return out

    def turn(self, run: list[Stmt], when: Expr | None) -> list[Stmt]:
        """`run` as a turn, ending after its last product (what follows it is not the
        turn's)."""
        if not run:
            return []
        last = max(k for k, s in enumerate(run) if _products_only(s))
        take, give = Turn(False, self.warpgroups, when), Turn(True, self.warpgroups, when)
        return [take, *run[: last + 1], give, *run[last + 1 :]]


def _both(a: Expr | None, b: Expr) -> Expr:
    return b if a is None else logical("and", (a, b))


def _reads(s: Stmt, buffers: dict[int, Buffer]) -> bool:
    return any(reads(s, b) for b in buffers.values())


def _holds_products(s: Stmt) -> bool:
    return any(is_wgmma(n) for n in walk_stmt(s))


def _products_only(s: Stmt) -> bool:
    """`s` is products (a loop of them, over k), and nothing else."""
    leaves = [n for n in walk_stmt(s) if not isinstance(n, _CONTAINERS)]
    return bool(leaves) and all(is_wgmma(n) for n in leaves)


def _waits(s: Stmt) -> bool:
    """`s` may wait for another warpgroup (a barrier, a collective) or for the producer (a
    memory barrier, whose stage the other warpgroup may release only in a turn of its own):
    held in a turn, that wait could wait for the turn."""
    return any(isinstance(n, _WAITS) for n in walk_stmt(s))


def _depends_on(s: For | If, z: Var) -> bool:
    heads = (s.min, s.extent) if isinstance(s, For) else (s.cond,)
    return any(x is z for e in heads for x in walk_expr(e))
