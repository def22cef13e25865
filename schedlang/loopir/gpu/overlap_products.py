"""The second product of an online scan's step moved into the next step (FlashAttention 3's
intra-warpgroup overlap): issued after the next step's scores, so that the tensor cores run it
while the warpgroup computes that step's softmax.

A step of a warpgroup's scan over blocks of keys, as the earlier passes leave it (one
warpgroup's statements in a loop over ``threadIdx.z``; the block's first thread issuing the
copy engine's copies in a loop of its own)::

    for j:
        issue (the copy of a later step's stage, after waiting for its release)
        consume: wait for stage j; S = products onto S (scores);
                 X1 (statistics from S: maxima, sums; no write to O or P)
                 X2 (P = probabilities from S); C1 (O *= rescale);
                 C2 (O += products of P and the stage); release stage j

becomes, for steps lo + 1 .. (lo, the first step, and the last step's C1, C2 and release
peeled before and after, the last step's issue with them)::

    for j:
        issue of step j - 1 (its release given in the step before)
        consume: wait for stage j; S = products (scores of j);
                 C1, C2 of step j - 1 (the rescale, then its products: they run on)
                 X1 of j; release stage j - 1 (once the products are done)
                 X2 of j (P is free again)

with one copy of every register tile: the products of step j - 1 read P before X2 of step j
writes it, and X1 touches neither P nor O. The copy that waits for stage j - 1's release is
issued a step late, at the start of the next step, where the release is given: issued in
step j itself, the block's first thread would wait there for the other warpgroup's softmax of
step j, holding the two warpgroups in step (their products then meet on the tensor cores at
the same time; H200, d = 128, L = 4096 and 8192: 318-325 TFLOP/s there, 402-415 issued at the
start). With a producer warpgroup's pipeline (`bulk_pipeline`, ``warp_specialize=True``)
the producer's copies follow the consumers' step and stay in it, and the consumers release
step j - 1's stage in step j (a group of products still running): rotated, that release
comes after X1 of step j, where step j - 1's second products are done; the first step
releases the stage of the step before the loop where there is one (a causal diagonal's own
loop after the steps below it), and the last step releases nothing (nobody waits for it).
The loop is left as it is where its step does not have this shape.

The schedule asks for it: ``s[update].pragma(step, "overlap_products")`` on the scan's step
axis (`examples/gpu_attention.wgmma_schedule(..., overlap=True)`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...ir.expr import Binary, Compare, Expr, const
from ..core.nodes import (
    Allocate,
    Buffer,
    For,
    If,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    seq,
)
from ..core.simplify import simplify_expr
from ..core.visit import stmt_exprs, substitute_stmt, transform_stmt, walk_expr, walk_stmt
from ..memory.bulk_pipeline import CONSUMER, ISSUER, PRODUCER
from ..memory.fragments import is_wgmma
from .pragma_loops import rewrite_pragma_loops


def overlap_products(stmt: Stmt, loops: dict[str, str]) -> Stmt:
    """`stmt` with the loops named in `loops` (``pragma(axis, "overlap_products")``: the
    axis's name -> its stage's) rotated (module doc); a `LoweringError` where a loop of a
    name is there and none of them has the shape (a scan of one step has no loop left)."""
    return rewrite_pragma_loops(stmt, loops, _rotated, "overlap_products", _NOT_A_STEP)


_NOT_A_STEP = (
    "is not the step of a warpgroup's online scan whose second products (onto a second "
    "accumulator, from a register operand) can move into the next step: that needs the "
    "scores' products, statistics, probabilities, the rescale and the second products in "
    "that order, and K's and V's stages filled by the copy engine; stage them with "
    "pipeline(stages, tma=True), or leave the pragma out"
)


@dataclass
class _Step:
    allocations: list[Buffer]
    issue: For  # the first thread's copies, or the producer warpgroup's (`specialized`)
    consumer: For  # the warpgroups' loop (its body replaced by each part's statements)
    wait: Stmt
    scores: list[Stmt]
    stats: list[Stmt]  # X1
    probabilities: list[Stmt]  # X2
    rescale: list[Stmt]  # C1
    products: list[Stmt]  # C2
    release: Stmt
    specialized: bool = False  # a producer warpgroup's pipeline (the issue after the step)


def _rotated(s: For) -> Stmt | None:
    if s.kind != "serial":
        return None
    step = _step(s)
    if step is None:
        return None
    v, lo, n = s.var, s.min, s.extent
    d = v.dtype

    def at(parts: list[Stmt], value: Expr) -> list[Stmt]:
        return [substitute_stmt(p, {v: simplify_expr(value)}) for p in parts]

    def consume(parts: list[Stmt]) -> Stmt:
        return replace(step.consumer, body=seq(*parts))

    previous = Binary("-", v, const(1, d), d)
    last = Binary("-", Binary("+", lo, n, d), const(1, d), d)
    if step.specialized:
        # a producer warpgroup's pipeline releases step j - 1's stage in step j, a group of
        # products still running; rotated, its second products are done by then
        released = transform_stmt(
            step.release, lambda x: replace(x, pending=0) if isinstance(x, MBarrier) else None
        )
        # the first step releases the stage of the step before it too, where one ran (the
        # last below a causal mask's diagonal, before the diagonal's own loop)
        head = [step.wait, *step.scores, *step.stats, released, *step.probabilities]
        first = seq(consume(at(head, lo)), *at([step.issue], lo))
        body = seq(
            consume(
                [
                    step.wait,
                    *step.scores,
                    *at([*step.rescale, *step.products], previous),
                    *step.stats,
                    released,
                    *step.probabilities,
                ]
            ),
            step.issue,
        )
        done = consume(at([*step.rescale, *step.products], last))
    else:
        head = [step.wait, *step.scores, *step.stats, *step.probabilities]
        tail = [*step.rescale, *step.products, step.release]
        first = consume(at(head, lo))
        body = seq(
            *at([step.issue], previous),
            consume(
                [
                    step.wait,
                    *step.scores,
                    *at([*step.rescale, *step.products], previous),
                    *step.stats,
                    *at([step.release], previous),
                    *step.probabilities,
                ]
            ),
        )
        done = seq(*at([step.issue], last), consume(at(tail, last)))
    start = simplify_expr(Binary("+", lo, const(1, d), d))
    rest = For(v, start, simplify_expr(Binary("-", n, const(1, d), d)), s.kind, body, s.thread)
    rotated: Stmt = If(Compare(">", n, const(0, d)), seq(first, rest, done))
    for buffer in reversed(step.allocations):
        rotated = Allocate(buffer, rotated)
    return rotated


def _step(loop: For) -> _Step | None:
    """The parts of `loop`'s step, or None where it does not have the shape of the module
    doc."""
    allocations: list[Buffer] = []
    body = loop.body
    while isinstance(body, Allocate):
        allocations.append(body.buffer)
        body = body.body
    if not (isinstance(body, Seq) and len(body.stmts) == 2):
        return None
    issue, consumer = body.stmts
    specialized = _role_loop(issue, CONSUMER) and _role_loop(consumer, PRODUCER)
    if specialized:
        consumer, issue = issue, consumer
    elif not (_role_loop(issue, ISSUER) and _role_loop(consumer, CONSUMER)):
        return None
    parts = _flattened(consumer.body, allocations)
    if len(parts) < 4 or not (_only(parts[0], "wait") and _only(parts[-1], "arrive")):
        return None
    products = [p for p in parts if _products(p)]
    if len(products) < 2:
        return None
    scores_acc = _products(products[0])
    out_acc = _products(products[-1])
    probs = _register_operand(products[-1])
    if scores_acc is None or out_acc is None or probs is None or scores_acc is out_acc:
        return None
    scores, stats, probabilities, rescale, second = [], [], [], [], []
    for p in parts[1:-1]:
        acc = _products(p)
        written = _written(p)
        if acc is scores_acc or (id(scores_acc) in written and not stats):
            scores.append(p)
        elif acc is out_acc:
            second.append(p)
        elif second:
            return None  # something after the second products
        elif written == {id(out_acc)}:
            rescale.append(p)
        elif written == {id(probs)}:
            probabilities.append(p)
        elif id(out_acc) in written or id(probs) in written or _reads(p, [out_acc, probs]):
            return None
        else:
            stats.append(p)
    if not (scores and second and probabilities and rescale):
        return None
    return _Step(
        allocations,
        issue,
        consumer,
        parts[0],
        scores,
        stats,
        probabilities,
        rescale,
        second,
        parts[-1],
        specialized,
    )


def _role_loop(s: Stmt, kind: str) -> bool:
    return isinstance(s, For) and s.kind == "bound" and s.var.kind == kind


def _flattened(s: Stmt, allocations: list[Buffer]) -> list[Stmt]:
    """The statements of `s` in order, its allocations hoisted into `allocations`."""
    if isinstance(s, Seq):
        return [x for kid in s.stmts for x in _flattened(kid, allocations)]
    if isinstance(s, Allocate):
        allocations.append(s.buffer)
        return _flattened(s.body, allocations)
    return [s]


def _leaves(s: Stmt) -> list[Stmt]:
    return [n for n in walk_stmt(s) if not isinstance(n, (Seq, For, If, Allocate))]


def _only(s: Stmt, op: str) -> bool:
    """Whether `s` does nothing but memory-barrier operations `op`."""
    leaves = _leaves(s)
    return bool(leaves) and all(isinstance(n, MBarrier) and n.op == op for n in leaves)


def _products(s: Stmt) -> Buffer | None:
    """The accumulator of `s` where it is nothing but warpgroup products (and a fill) onto
    one accumulator."""
    leaves = _leaves(s)
    if not leaves or not all(isinstance(n, MatrixOp) for n in leaves):
        return None
    if not any(is_wgmma(n) for n in leaves):
        return None
    targets = {id(n.dst.buffer): n.dst.buffer for n in leaves}
    return next(iter(targets.values())) if len(targets) == 1 else None


def _register_operand(s: Stmt) -> Buffer | None:
    """The register fragment the products of `s` take as their A operand."""
    for n in _leaves(s):
        if isinstance(n, MatrixOp) and n.srcs and n.srcs[0].buffer.scope.startswith("wgmma"):
            return n.srcs[0].buffer
    return None


def _written(s: Stmt) -> set[int]:
    """The buffers (by identity) `s` stores to; 0 stands for any other kind of statement."""
    found = set()
    for n in _leaves(s):
        if isinstance(n, Store):
            found.add(id(n.buffer))
        elif isinstance(n, MatrixOp):
            found.add(id(n.dst.buffer))
        else:
            found.add(0)
    return found


def _reads(s: Stmt, buffers: list[Buffer]) -> bool:
    ids = {id(b) for b in buffers}
    for n in walk_stmt(s):
        for e in stmt_exprs(n):
            if any(isinstance(x, Load) and id(x.buffer) in ids for x in walk_expr(e)):
                return True
    return False
