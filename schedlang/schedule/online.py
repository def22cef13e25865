"""online: a chain of reductions over one axis fused into one pass over blocks of it, carrying
running state that is rescaled when the running maximum grows (the online softmax, the heart of
FlashAttention).

For attention written as its definition over keys ``j``::

    M[i]    = max(S[i, j], j)
    P[i, j] = exp(S[i, j] - M[i])
    Z[i]    = sum(P[i, j], j)
    O[i, e] = sum(P[i, j] * V[j, e], j)

``s.online([M, Z, O], factor=64)`` cuts ``j`` into blocks of 64 and computes all three in one
sweep over the blocks, as a scan (`ir.scan`) whose step ``t`` takes block ``t - 1``::

    m[t, i]    = max(m[t - 1, i], max(S[i, block t], j.inner))
    z[t, i]    = z[t - 1, i] * exp(m[t - 1, i] - m[t, i]) + sum(exp(S[i, block t] - m[t, i]))
    o[t, i, e] = o[t - 1, i, e] * exp(m[t - 1, i] - m[t, i]) + sum(exp(S - m[t, i]) * V[.., e])

and ``M``, ``Z`` and ``O`` become the scan's last rows. This is exact, not an approximation:
``exp(x - m) = exp(x - m') * exp(m' - m)``, so each block's terms, taken against the maximum so
far and rescaled by every later step, are the terms against the final maximum. The primitive
proves what that needs, and refuses anything else with the expression that breaks it: the first
reduction is a ``max``, the later ones are sums over an axis of the same range, each reads the
maximum only inside factors ``exp(x - M)`` (or ``exp2``, the difference scaled by a positive
constant, as a softmax with its scale folded in writes it) where ``x`` is the very value the
maximum is taken of, so that no term exceeds 1 on the way (the sums cannot overflow where the
definition does not). Masks (``where=`` of any reduction, a causal ``j <= i`` included) are
kept per reduction: blocks a row never reaches contribute nothing.

Intermediate stages between the maximum and the sums (``P`` above) are folded into the sums;
a stage nothing reads afterwards leaves the schedule. The scan's stages (its block maximum,
block sums and updates) are scheduled as any stages are; the returned tensors are its states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..ir import dtype as dt
from ..ir.expr import (
    Binary,
    Call,
    Cast,
    Const,
    Expr,
    Read,
    Reduce,
    Var,
    as_expr,
    const,
    logical,
    select,
)
from ..ir.graph import post_order, together
from ..ir.integers import as_int
from ..ir.printer import expr_str
from ..ir.scan import scan
from ..ir.tensor import ComputeOp, IterVar, Range, Tensor, axis_dtype, placeholder
from ..ir.visit import substitute, transform, walk
from . import records as rec
from .errors import OnlineError, message

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage

RESCALED = ("exp", "exp2", "fast_exp2")  # exp(a - b) = exp(a - c) * exp(c - b), and so for exp2


def online(
    s: Schedule, tensors: object, factor: object, loc: str, keep=(), threshold=None
) -> list[Tensor]:
    listed = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    stages = [s[t] for t in listed]
    kept = [s[t] for t in (keep if isinstance(keep, (list, tuple)) else [keep])]
    names = ", ".join(st.name for st in stages)
    shown = f", keep=[{', '.join(st.name for st in kept)}]" if kept else ""
    shown += f", threshold={threshold}" if threshold is not None else ""
    call = f"online([{names}], factor={factor}{shown})"
    first = stages[0]

    def fail(stage: Stage, what: str) -> None:
        raise OnlineError(message(stage.name, call, loc, what))

    if len(stages) < 2:
        fail(first, "give the maximum and at least one reduction that reads it, in order")
    if len({st.name for st in stages}) != len(stages):
        fail(first, "a stage is listed twice")
    blocks = as_int(factor)
    if blocks is None or blocks < 1:
        fail(first, f"factor must be a positive integer (the block of the axis), got {factor!r}")
    reductions = [_reduction(st, call, loc, fail) for st in stages]
    top, rest = reductions[0], reductions[1:]
    if top.combiner.name not in ("max", "sum"):
        fail(
            first,
            f"'{first.name}' reduces with {top.combiner.name}; the first reduction of an "
            "online chain is a maximum that the later sums are taken against (softmax), or a "
            "sum whose mean they are taken about (variance)",
        )
    for st, r in zip(stages[1:], rest):
        if r.combiner.name != "sum":
            fail(
                st,
                f"'{st.name}' reduces with {r.combiner.name}; only sums are rescaled "
                "exactly when the maximum grows",
            )
        if not _same(r.axis[0].dom, top.axis[0].dom):
            fail(
                st,
                f"'{st.name}' reduces over {_range(r.axis[0])} and '{first.name}' over "
                f"{_range(top.axis[0])}; an online pass needs one range",
            )
    if top.combiner.name == "sum" and kept:
        fail(kept[0], "keep= names stages of a softmax chain (between its maximum and sums)")
    if top.combiner.name == "sum" and threshold is not None:
        fail(
            first,
            "threshold= is for a softmax chain: it bounds how far the maximum that the "
            "sums are taken against may lag the running maximum",
        )
    if threshold is not None and not (
        isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold >= 0
    ):
        fail(first, f"threshold must be a number >= 0 (an exponent), got {threshold!r}")
    if top.combiner.name == "sum":
        from .online_moments import Moments

        moments = Moments(s, stages, call, loc, fail)
        return moments.rewrite(blocks, [moments.centred(st) for st in stages[1:]])
    chain = _Softmax(s, stages, call, loc, fail, kept)
    sources = [chain.rescalable(st) for st in stages[1:]]
    if threshold is not None:
        chain.check_threshold(float(threshold), sources)
    return chain.rewrite(blocks, sources, threshold)


@dataclass
class Sweep:
    """The scan of one online pass before its updates (`Rewrite.sweep`)."""

    name: str
    count: Expr  # blocks of the reduce axis
    steps: Expr  # rows of each state: one per block, and the state before the first
    step: str  # names of the loops over the steps, the blocks and a block's elements
    block: str
    inner: str
    ops: list[ComputeOp]  # the reductions, in the chain's order
    states: list[Tensor]
    inits: list[Tensor]


class Rewrite:
    """What the online forms share: the chain's stages, the first reduction (`top`) and the
    stages between it and the others, and putting the scan in the schedule."""

    threshold: float | None = None  # a softmax chain's lag of its reference maximum

    def __init__(
        self, s: Schedule, stages: list[Stage], call: str, loc: str, fail, kept=()
    ) -> None:
        self.s, self.stages, self.call, self.loc, self.fail = s, stages, call, loc, fail
        self.top = stages[0].op
        self.listed = {st.op for st in stages}
        self.kept = [st.op for st in kept]
        for stage in kept:
            self._check_kept(stage)

    def _check_kept(self, stage: Stage) -> None:
        """A kept stage stands between the maximum and the sums, elementwise."""
        op = stage.op
        between = (
            isinstance(op, ComputeOp)
            and not isinstance(op.expr, Reduce)
            and op not in self.listed
            and self._reaches_top(op)
            and any(op in post_order([st.op]) for st in self.stages[1:])
        )
        if not between:
            self.fail(
                stage,
                f"'{stage.name}' is not an elementwise stage between '{self.top.name}' and the "
                "sums; keep= names those (computed one block at a time, in the scan's steps)",
            )

    def folded_source(self, stage: Stage) -> tuple[Expr, tuple[Expr, ...]]:
        """`stage`'s source with the stages between it and `top` folded in, and the one point
        it reads `top` at (refused where it reads it nowhere, at several points or at one
        that moves with its reduce axis)."""
        body: Reduce = stage.op.expr
        source = self._folded(stage, body.source)
        reads = [e for e in walk(source) if isinstance(e, Read) and e.tensor.op is self.top]
        if not reads:
            self.fail(
                stage,
                f"'{stage.name}' does not read '{self.top.name}'; list only the "
                "reductions taken against it",
            )
        shown = {expr_str(e) for e in reads}
        if len(shown) > 1:
            self.fail(
                stage,
                f"'{stage.name}' reads '{self.top.name}' at several points "
                f"({', '.join(sorted(shown))}); an online pass keeps one per row",
            )
        at = reads[0].indices
        j = body.axis[0]
        if any(v is j or v is j.var for i in at for v in walk(i)):
            self.fail(
                stage,
                f"'{stage.name}' reads '{expr_str(reads[0])}' at a point that "
                f"moves with the reduce axis '{j.var.name}'",
            )
        return source, at

    def _folded(self, stage: Stage, e: Expr, keep: bool = False) -> Expr:
        """`e` with every stage between it and the maximum inlined (those are elementwise);
        with `keep`, but the kept ones."""

        def fold(x: Expr) -> Expr | None:
            if not isinstance(x, Read) or x.tensor.op is self.top:
                return None
            op = x.tensor.op
            if op in self.listed or not self._reaches_top(op) or (keep and op in self.kept):
                return None
            if (
                not isinstance(op, ComputeOp)
                or isinstance(op.expr, Reduce)
                or len(together(op)) > 1
            ):
                self.fail(
                    stage,
                    f"'{stage.name}' reads '{self.top.name}' through "
                    f"'{op.name}', which is not an elementwise stage; only elementwise "
                    "stages may stand between the maximum and the sums",
                )
            inner = substitute(op.expr, _mapping(op.axis, x.indices))
            return transform(inner, fold)

        return transform(e, fold)

    def _reaches_top(self, op) -> bool:
        return self.top in post_order([op])

    def _top_value(self, at, j: IterVar) -> Expr:
        """The maximum's source at the point `at`, its reduce axis renamed `j`."""
        body: Reduce = self.top.expr
        mapping = _mapping(self.top.axis, at)
        mapping[body.axis[0]] = mapping[body.axis[0].var] = j.var
        return substitute(body.source, mapping)

    def _reads_top(self, e: Expr) -> bool:
        return any(isinstance(x, Read) and x.tensor.op is self.top for x in walk(e))

    def _is_top(self, e: Expr) -> bool:
        return isinstance(e, Read) and e.tensor.op is self.top

    def sweep(self, blocks: int) -> Sweep:
        """The scan of the pass before its updates: `blocks` of the reduce axis (the last maybe
        short), a row before the first for the state, one state per reduction starting from
        its identity."""
        j = self.top.expr.axis[0]
        extent = j.dom.extent
        known = as_int(extent)
        if known is not None:
            count = const(-(-known // blocks))
            steps = const(count.value + 1)
        else:
            count = (extent + blocks - 1) // blocks
            steps = count + 1
        name = self.s.unique_name(f"{self.top.name}.online")
        ops = [st.op for st in self.stages]
        states = [
            placeholder((steps, *op.shape), op.dtype, f"{name}.state{k}")
            for k, op in enumerate(ops)
        ]
        inits = [
            _compute(f"{name}.init{k}", [("step", const(1))] + _axes(op), _constant(op))
            for k, op in enumerate(ops)
        ]
        axis = j.var.name
        return Sweep(
            name, count, steps, f"{axis}.step", f"{axis}.block", f"{axis}.inner", ops, states, inits
        )

    def finish(
        self, sweep: Sweep, updates: list[Tensor], blocks: int, live=None, final=None
    ) -> list[Tensor]:
        """The scan made of `sweep` and its `updates`, put in the schedule in place of the
        reductions (their values its last rows, or `final(k, states, point)` of the k-th);
        its states, with the steps that may change them (`live`, one per update, see
        `ScanOp.live`), those of the reductions only. States past the reductions' (a lagging
        reference and its lag) step right after the first reduction's, before the sums that
        read them: a step's statements then come in the order `overlap_products` expects."""
        n = len(sweep.ops)
        order = [0, *range(n, len(updates)), *range(1, n)]
        names = [f"{op.name}.run" for op in sweep.ops]
        names += [f"{self.top.name}.{what}" for what in ("reference", "lag")][: len(order) - n]
        live = live or [None] * len(updates)
        made = scan(
            [sweep.inits[k] for k in order],
            [updates[k] for k in order],
            [sweep.states[k] for k in order],
            name=sweep.name,
        )
        renamed = running(made, [names[k] for k in order], [live[k] for k in order])
        results = [renamed[order.index(k)] for k in range(len(order))]

        def last(k: int, a: tuple) -> Expr:
            if final is None:
                return results[k][(sweep.count, *a)]
            return final(k, results, a)

        finals = [
            _compute(op.name, _axes(op), lambda *a, k=k: last(k, a)).op
            for k, op in enumerate(sweep.ops)
        ]
        self._install(finals)
        names = tuple(st.name for st in self.stages)
        kept = tuple(op.name for op in self.kept)
        self.s.records.append(rec.Online(names, blocks, self.loc, kept, self.threshold))
        return results[:n]

    def _install(self, finals: list[ComputeOp]) -> None:
        """The scan's stages into the schedule, the reductions replaced by its last rows, and
        stages nothing reads any more taken out."""
        s = self.s
        for stage, final in zip(self.stages, finals):
            s.replace_op(stage, s.made(final), keep_loops=False)
        known = {op for st in s.stages for op in st.ops}
        for op in post_order(list(s.output_ops)):
            if op in known:
                continue
            group = together(op)
            stage = s.add_stage(s.made(op), before=s.stages[0])
            if len(group) > 1:
                stage.ops = tuple(s.made(o) if o is not op else stage.op for o in group)
            for each in stage.ops:
                s._by_op[each] = stage
            known.update(group)
        s.keep_reachable_stages()


class _Softmax(Rewrite):
    """A maximum and the sums taken against it."""

    def rescalable(self, stage: Stage) -> tuple[Expr, tuple[Expr, ...], Expr, str, list[str]]:
        """The source of `stage`'s sum with the stages between it and the maximum folded in,
        the indices it reads the maximum at, the positive scale of its exponents, the
        function (exp or exp2) and the floating types the factor is rounded to on the way;
        refused where the maximum appears any other way."""
        source, at = self.folded_source(stage)
        scale, fn, rounded = self._factors(stage, source, at, stage.op.expr.axis[0])
        return source, at, scale, fn, rounded

    def check_threshold(self, threshold: float, sources) -> None:
        """A lagging maximum lets each term reach ``exp(threshold)`` (or ``2 ** threshold``):
        refused where that passes a type the term is rounded to, or 2 ** 32, past which
        sums of many terms could overflow float32 where the definition does not."""
        for stage, (_, _, _, fn, rounded) in zip(self.stages[1:], sources):
            bound = 2.0**threshold if fn != "exp" else math.exp(threshold)
            for name in ["float32", *rounded]:
                most = 2.0**32 if name == "float32" else float(dt.max_value(name))
                if bound > most:
                    where = "" if name == "float32" else f", rounded to {name} (at most {most:g})"
                    self.fail(
                        stage,
                        f"with threshold={threshold:g} the terms of '{stage.name}' reach "
                        f"{fn}({threshold:g}) = {bound:g}{where}; give a smaller threshold "
                        f"(8 keeps them below {2.0**8 if fn != 'exp' else math.exp(8):g})",
                    )

    def _factors(self, stage: Stage, source: Expr, at, j: IterVar) -> tuple[Expr, str, list]:
        """Check that `source` is a product whose only factors reading the maximum are
        ``exp(scale * (x - M))`` with x the maximum's own value; their scale, function and
        the floating types they are rounded to."""
        found: list[tuple[Expr, str, list]] = []
        for factor in _product(source):
            if not self._reads_top(factor):
                continue
            rounded = _roundings(factor)
            factor = _unrounded(factor)
            if not (isinstance(factor, Call) and factor.name in RESCALED):
                self.fail(
                    stage,
                    f"'{stage.name}' reads '{self.top.name}' in "
                    f"'{expr_str(factor)}'; the sums may read the maximum only in "
                    "factors exp(x - max) (or exp2), which rescaling repairs exactly",
                )
            difference, scale = _scaled(factor.args[0])
            if scale is None or not (
                isinstance(difference, Binary)
                and difference.op == "-"
                and self._is_top(difference.b)
                and not self._reads_top(difference.a)
            ):
                self.fail(
                    stage,
                    f"in '{stage.name}', the exponent of '{expr_str(factor)}' is "
                    f"not x - {self.top.name}[...] times a positive constant (or x * c + "
                    f"{self.top.name}[...] * -c); rescaling "
                    "repairs only that form",
                )
            own = self._top_value(at, j)
            if expr_str(difference.a) != expr_str(own):
                self.fail(
                    stage,
                    f"in '{stage.name}', '{expr_str(factor)}' takes "
                    f"'{expr_str(difference.a)}' against the maximum of "
                    f"'{expr_str(own)}'; only the values the maximum is taken of are "
                    "bounded by it on the way (others could overflow)",
                )
            found.append((scale, factor.name, rounded))
        if len(found) != 1:
            self.fail(
                stage,
                f"'{stage.name}' has {len(found)} factors exp(x - "
                f"{self.top.name}[...]); an online sum rescales exactly one",
            )
        return found[0]

    # -- the rewrite -----------------------------------------------------------------------

    def rewrite(self, blocks: int, sources, threshold: float | None = None) -> list[Tensor]:
        self.threshold = threshold
        top = self.top
        top_body: Reduce = top.expr
        j = top_body.axis[0]
        extent, start = j.dom.extent, j.dom.min
        sweep = self.sweep(blocks)
        name, steps, count = sweep.name, sweep.steps, sweep.count
        ops, states = sweep.ops, sweep.states
        step, block, inner = sweep.step, sweep.block, sweep.inner
        m = states[0]

        def within(t: Expr, reduce: Reduce, mapping: dict, step: bool = True, r=None) -> tuple:
            """The key of block t - 1 at a new reduce axis (or `r`), the axis, and the guard of
            the reduction there: the key inside the range, the reduction's own mask, and for a
            `step` of the scan, t >= 1 (the bounds are checked for row 0 too, which the scan
            fills from its init)."""
            if r is None:
                r = IterVar(Var(inner, "int32", "reduce"), Range(const(0), const(blocks)), "reduce")
            key = start + (t - 1) * blocks + r.var
            own = reduce.axis[0]
            guard = (
                [t >= 1, (t - 1) * blocks + r.var < extent]
                if step
                else [(t - 1) * blocks + r.var < extent]
            )
            if reduce.where is not None:
                guard.append(substitute(reduce.where, {**mapping, own: key, own.var: key}))
            return key, r, logical("and", guard)

        def block_max(b, *a):  # reads no state: computed for every block ahead of the steps
            mapping = _mapping(top.axis, a)
            key, r, guard = within(b + 1, top_body, mapping, step=False)
            own = top_body.axis[0]
            value = substitute(top_body.source, {**mapping, own: key, own.var: key})
            return Reduce(top_body.combiner, value, (r,), guard, top_body.dtype)

        peak = _compute(f"{name}.block_max", [(block, count)] + _axes(top), block_max)

        def grown(t, *a):
            comb = top_body.combiner
            old, new = m[(t - 1, *a)], peak[(t - 1, *a)]
            return substitute(comb.result, {comb.lhs: old, comb.rhs: new})

        rows = [(step, steps)] + _axes(top)
        updates = [_compute(f"{name}.{top.name}_update", rows, grown)]
        reference = m  # what the sums' exponents are taken against
        if threshold is not None:
            reference = placeholder((steps, *top.shape), top.dtype, f"{name}.reference")
            margin = threshold / max(float(scale.value) for _, _, scale, _, _ in sources)
            reference_update = _compute(
                f"{name}.{top.name}_reference_update",
                rows,
                lambda t, *a: select(
                    m[(t, *a)] > reference[(t - 1, *a)] + const(margin, top.dtype),
                    m[(t, *a)],
                    reference[(t - 1, *a)],
                ),
            )
        masks = {op: self._kept_mask(op) for op in self.kept}
        blocked = {
            op: self._kept_block(op, sweep, blocks, reference, masks[op][0]) for op in self.kept
        }
        unmasked = {stage for _, readers in masks.values() for stage in readers}
        for k, (op, (_, at, scale, fn, _)) in enumerate(zip(ops[1:], sources), start=1):
            body: Reduce = op.expr
            rows_k = [(step, steps)] + _axes(op)
            source = self._folded(self.stages[k], body.source, keep=True)
            bounds = replace(body, where=None) if op in unmasked else body

            def block_sum(t, *a, op=op, body=body, source=source, bounds=bounds):
                mapping = _mapping(op.axis, a)
                key, r, guard = within(t, bounds, mapping)
                own = body.axis[0]

                def at_step(x: Expr) -> Expr | None:
                    if self._is_top(x):
                        return reference[(t, *x.indices)]
                    if isinstance(x, Read) and x.tensor.op in blocked:
                        tile, p = blocked[x.tensor.op]
                        return tile[(t, *x.indices[:p], r.var, *x.indices[p + 1 :])]
                    return None

                value = transform(substitute(source, {**mapping, own: key, own.var: key}), at_step)
                return Reduce(body.combiner, value, (r,), guard, body.dtype)

            part = _compute(f"{name}.{op.name}_block", rows_k, block_sum)

            def rescaled(t, *a, op=op, at=at, scale=scale, fn=fn, part=part, k=k):
                point = tuple(substitute(i, _mapping(op.axis, a)) for i in at)
                exponent = reference[(t - 1, *point)] - reference[(t, *point)]
                if not (isinstance(scale, Const) and scale.value == 1):
                    exponent = exponent * scale
                factor = Call(fn, (exponent,), exponent.dtype)
                return states[k][(t - 1, *a)] * factor + part[(t, *a)]

            updates.append(_compute(f"{name}.{op.name}_update", rows_k, rescaled))
        live = self._live(updates, sources, within, blocks)
        if threshold is None:
            return self.finish(sweep, updates, blocks, live)
        # The reference's lag behind the maximum, its own state: the final values read it
        # and the maximum at the last step, states of one row each, which steps a schedule
        # skips leave as their last live step wrote them (`poly.scan_live`).
        lag = placeholder((steps, *top.shape), top.dtype, f"{name}.lag")
        lag_update = _compute(
            f"{name}.{top.name}_lag_update",
            rows,
            lambda t, *a: reference[(t, *a)] - m[(t, *a)],
        )
        first = [("step", const(1))] + _axes(top)
        sweep.states += [reference, lag]
        sweep.inits += [
            _compute(f"{name}.init_reference", first, _constant(top)),
            _compute(f"{name}.init_lag", first, lambda *a: const(0.0, top.dtype)),
        ]
        updates += [reference_update, lag_update]
        live += [_moved(live[0], updates[0], u) for u in (reference_update, lag_update)]
        return self.finish(sweep, updates, blocks, live, _caught_up(ops, sources, count))

    def _live(self, updates: list[Tensor], sources, within, blocks: int) -> list:
        """Per update, the steps of a row that may change its state, as ``(axis, condition)``:
        those where a key of the step's block passes the maximum's mask at the row's point or
        the update's own sum's mask. At any other step the block's maximum is the identity,
        the rescaling factors are 1 and the block's sums are 0, so the step changes nothing
        and a schedule may skip it (a causal mask's blocks above the diagonal). None where a
        reduction has no mask: every step of every row counts."""
        ops = [self.top, *(st.op for st in self.stages[1:])]
        if any(op.expr.where is None for op in ops):
            return [None] * len(updates)
        top_body: Reduce = self.top.expr
        lives = []
        for k, update in enumerate(updates):
            t, *a = (iv.var for iv in update.op.axis)
            op = ops[k]
            r = IterVar(Var("live", "int32", "reduce"), Range(const(0), const(blocks)), "reduce")
            points = [(top_body, _mapping(self.top.axis, a))]
            if k:
                at = tuple(substitute(i, _mapping(op.axis, a)) for i in sources[k - 1][1])
                points = [(op.expr, _mapping(op.axis, a)), (top_body, _mapping(self.top.axis, at))]
            guards = [within(t, body, mapping, r=r)[2] for body, mapping in points]
            lives.append((r, logical("or", guards)))
        return lives

    def _kept_mask(self, op: ComputeOp):
        """The mask of the sums that read kept `op` (their `where=`, the same for each), as a
        function of a point of `op`, and those sums' ops; ``(None, ())`` where one has none, they
        differ, or a mask depends on more than the point. A kept stage zero where the mask
        fails adds nothing to those sums, which then need no mask of their own: a product on
        the tensor cores takes no mask (a causal one would cut its tiles)."""
        found = []
        for stage in self.stages[1:]:
            body: Reduce = stage.op.expr
            source = self._folded(stage, body.source, keep=True)
            reads = [x for x in walk(source) if isinstance(x, Read) and x.tensor.op is op]
            if not reads:
                continue
            if body.where is None:
                return None, ()
            at = {}
            for p, index in enumerate(reads[0].indices):
                if isinstance(index, Var):
                    at[index] = p
            free = [v for v in walk(body.where) if isinstance(v, Var) and v.kind != "size"]
            if any(v not in at for v in free):
                return None, ()
            found.append((body.where, at, stage.op))
        if not found:
            return None, ()

        def mask(where, at):
            return lambda point: substitute(where, {v: point[p] for v, p in at.items()})

        masks = [mask(where, at) for where, at, _ in found]
        probe = tuple(Var(f"p{k}", "int32", "axis") for k in range(len(op.axis)))
        if len({expr_str(m(probe)) for m in masks}) != 1:
            return None, ()
        return masks[0], tuple(reader for _, _, reader in found)

    def _kept_block(
        self, op: ComputeOp, sweep: Sweep, blocks: int, reference: Tensor, mask=None
    ) -> tuple[Tensor, int]:
        """The kept stage `op` one block of the reduce axis at a time, a row per step (zero
        outside the axis, at step 0 and where `mask` of the point fails), the maximum read as
        the state `reference`, and which of its axes runs along the block."""
        position = self._key_position(op)
        j = self.top.expr.axis[0]
        extent, start = j.dom.extent, j.dom.min
        axes = _axes(op)
        axes[position] = (sweep.inner, const(blocks))
        body = self._folded(self.s[op], op.expr, keep=True)

        def block(t, *a):
            key = start + (t - 1) * blocks + a[position]
            point = (*a[:position], key, *a[position + 1 :])
            value = transform(
                substitute(body, _mapping(op.axis, point)),
                lambda x: reference[(t, *x.indices)] if self._is_top(x) else None,
            )
            conditions = [t >= 1, (t - 1) * blocks + a[position] < extent]
            if mask is not None:
                conditions.append(mask(point))
            return select(logical("and", conditions), value, const(0, value.dtype))

        rows = [(sweep.step, sweep.steps)] + axes
        return _compute(f"{sweep.name}.{op.name}_block", rows, block), position

    def _key_position(self, op: ComputeOp) -> int:
        """The axis of kept `op` that the sums read it along, by their reduce axis."""
        found = set()
        for stage in self.stages[1:]:
            body: Reduce = stage.op.expr
            j = body.axis[0]
            source = self._folded(stage, body.source, keep=True)
            for x in walk(source):
                if isinstance(x, Read) and x.tensor.op is op:
                    hits = [p for p, i in enumerate(x.indices) if i is j or i is j.var]
                    moving = [i for i in x.indices if any(v is j or v is j.var for v in walk(i))]
                    if len(hits) != 1 or len(moving) != 1:
                        self.fail(
                            self.s[op],
                            f"'{stage.name}' reads the kept '{op.name}' at "
                            f"'{expr_str(x)}'; a kept stage is read along the reduce axis "
                            "itself, at one of its axes",
                        )
                    found.add(hits[0])
        if len(found) != 1:
            self.fail(self.s[op], f"the sums read the kept '{op.name}' along different axes")
        return found.pop()


def running(results: list[Tensor], names: list[str], live: list) -> list[Tensor]:
    """The scan's states named after the reductions they carry (``M.run``, ``Z.run``), which
    reads better in a lowered loop nest than the scan's numbering."""
    renamed = [replace(t.op, name=name, live=lv) for t, name, lv in zip(results, names, live)]
    renamed[0].outputs.ops = tuple(renamed)
    return [Tensor(op, k) for k, op in enumerate(renamed)]


def _reduction(stage: Stage, call: str, loc: str, fail) -> Reduce:
    op = stage.op
    if not isinstance(op, ComputeOp) or not isinstance(op.expr, Reduce):
        fail(stage, f"'{stage.name}' is not a reduction")
    stage._one_output(OnlineError, call, loc)
    stage._keep_in_scan(call, loc, OnlineError)
    if stage.relations or stage.annotations or stage.binds or stage.attach is not None:
        fail(
            stage,
            f"'{stage.name}' is scheduled already; call online first, then schedule "
            "the stages it makes",
        )
    if len(op.expr.axis) != 1:
        fail(
            stage,
            f"'{stage.name}' reduces over {len(op.expr.axis)} axes; an online pass runs over one",
        )
    return op.expr


def _product(e: Expr) -> list[Expr]:
    """The factors of a product (a division by a factor free of the maximum is a factor)."""
    if isinstance(e, Binary) and e.op == "*":
        return _product(e.a) + _product(e.b)
    if isinstance(e, Binary) and e.op == "/":
        return _product(e.a) + [Binary("/", const(1.0, e.dtype), e.b, e.dtype)]
    return [e]


def _moved(live, source: Tensor, target: Tensor):
    """`live` of update `source` (see `Rewrite._live`) for `target`, over the same points:
    the lagging reference and its lag move only where the maximum does."""
    if live is None:
        return None
    axis, cond = live
    mapping = {a.var: b.var for a, b in zip(source.op.axis, target.op.axis)}
    return axis, substitute(cond, mapping)


def _caught_up(ops: list[ComputeOp], sources, count: Expr):
    """The final values of a chain whose sums were taken against a lagging reference
    maximum: the maximum as it is, each sum times ``exp(scale * lag)`` (the lag, ``ref -
    max``, the last state) at the row it reads the maximum at, as if taken against the
    maximum itself."""

    def final(k: int, states: list[Tensor], a: tuple) -> Expr:
        if k == 0:
            return states[0][(count, *a)]
        _, at, scale, fn, _ = sources[k - 1]
        point = tuple(substitute(i, _mapping(ops[k].axis, a)) for i in at)
        exponent = states[-1][(count, *point)]
        if not (isinstance(scale, Const) and scale.value == 1):
            exponent = exponent * scale
        return states[k][(count, *a)] * Call(fn, (exponent,), exponent.dtype)

    return final


def _roundings(e: Expr) -> list[str]:
    """The floating types of the conversions `_unrounded` takes off `e`."""
    found = []
    while isinstance(e, Cast) and dt.is_float(e.dtype) and dt.is_float(e.value.dtype):
        found.append(e.dtype)
        e = e.value
    return found


def _unrounded(e: Expr) -> Expr:
    """`e` without the conversions between floating types around it: a factor rounded (to the
    tensor cores' float16, as FlashAttention rounds its probabilities) is rescaled as the
    factor it rounds, exactly up to that rounding."""
    while isinstance(e, Cast) and dt.is_float(e.dtype) and dt.is_float(e.value.dtype):
        e = e.value
    return e


def _scaled(e: Expr) -> tuple[Expr, Expr | None]:
    """`e` as ``difference * scale`` with a positive constant scale (None where it is not);
    ``x * c - y * c`` and ``x * c + y * -c`` too, the scale distributed (FlashAttention's
    exponent: ``x * c + (y * -c)`` is one fused multiply-add, ``y * -c`` once a row)."""
    if isinstance(e, Binary) and e.op in ("-", "+"):
        a, left = _scaled(e.a)
        b, right = _scaled(e.b) if e.op == "-" else _negated_scale(e.b)
        if isinstance(left, Const) and isinstance(right, Const) and left.value == right.value:
            return Binary("-", a, b, e.dtype), left
    if isinstance(e, Binary) and e.op in ("*", "/"):
        for inner, c in ((e.a, e.b), (e.b, e.a)) if e.op == "*" else ((e.a, e.b),):
            value = c.value if isinstance(c, Const) else None
            if value is not None and value > 0:
                scale = c if e.op == "*" else const(1.0 / value, c.dtype)
                return inner, scale
        return e, None
    return e, const(1.0, e.dtype)


def _negated_scale(e: Expr) -> tuple[Expr, Expr | None]:
    """``y * -c`` (a product by a negative constant) as ``(y, c)``; None where it is not."""
    if isinstance(e, Binary) and e.op == "*":
        for inner, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, Const) and c.value < 0:
                return inner, const(-c.value, c.dtype)
    return e, None


def _same(a: Range, b: Range) -> bool:
    return expr_str(a.min) == expr_str(b.min) and expr_str(a.extent) == expr_str(b.extent)


def _range(iv: IterVar) -> str:
    lo, extent = as_int(iv.dom.min), as_int(iv.dom.extent)
    if lo == 0:
        return f"[0, {expr_str(iv.dom.extent)})"
    if lo is not None and extent is not None:
        return f"[{lo}, {lo + extent})"
    return f"[{expr_str(iv.dom.min)}, {expr_str(iv.dom.min + iv.dom.extent)})"


def _axes(op: ComputeOp) -> list[tuple[str, Expr]]:
    return [(iv.var.name, iv.dom.extent) for iv in op.axis]


def _mapping(axis, values) -> dict:
    mapping: dict = {}
    for iv, x in zip(axis, values):
        mapping[iv] = mapping[iv.var] = x
    return mapping


def _constant(op: ComputeOp):
    identity = op.expr.combiner.identity
    return lambda *a: identity


def _compute(name: str, rows: list[tuple[str, Expr]], fn) -> Tensor:
    """A compute named `name` over `rows` (axis name and extent each), axes named as given."""
    axis = tuple(
        IterVar(Var(n, axis_dtype(ext), "axis"), Range(const(0), ext), "data") for n, ext in rows
    )
    body = as_expr(fn(*(iv.var for iv in axis)))
    reduce_axes = body.axis if isinstance(body, Reduce) else ()
    return Tensor(ComputeOp(name, "", axis, reduce_axes, body))
