"""online for a sum and the squares about its mean: the one-pass (Welford, Chan et al.) form of
the variance, as layer norm and RMSNorm's statistics use it.

For a mean and variance written as their definition over ``j`` (of extent ``N``)::

    T[i]  = sum(X[i, j], j)
    MU[i] = T[i] / N
    Q[i]  = sum((X[i, j] - MU[i]) ** 2, j)

``s.online([T, Q], factor=B)`` computes both in one sweep over blocks of ``B``: each block's sum
``t_b`` and its squares about its own mean ``q_b`` (both independent of the others, computed
ahead of the sweep), then a scan whose step merges one block into the running values::

    T[t] = T[t - 1] + t_b
    Q[t] = Q[t - 1] + q_b + (t_b / c - T[t - 1] / n) ** 2 * n * c / (n + c)

with ``n`` the elements before the block and ``c`` the block's. This is exact in real arithmetic
(the squares about the final mean are the squares about each block's mean plus the shift of the
means), and it never subtracts two large sums of squares, so it keeps the accuracy that the
naive one-pass form (``E[x^2] - E[x]^2``) loses. Preconditions, refused by name otherwise: no
mask on either reduction (the counts would differ from the axis's extent), the mean is the first
sum divided by that extent, and each later sum is exactly ``(x - mean) ** 2`` (or the product of
the difference with itself) with ``x`` the value the first sum adds up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.expr import Binary, Call, Cast, Const, Expr, Reduce, Var, binary, const, logical, select
from ..ir.integers import as_int
from ..ir.printer import expr_str
from ..ir.tensor import IterVar, Range, Tensor
from ..ir.visit import substitute
from .online import Rewrite, _axes, _compute, _mapping

if TYPE_CHECKING:
    from .stage import Stage


class Moments(Rewrite):
    """A sum and the sums of squares about its mean."""

    def centred(self, stage: Stage) -> tuple[Expr, tuple[Expr, ...]]:
        """`stage`'s squared difference ``x - mean`` (its source folded) and the point it
        reads the sum at; refused where the source is anything else."""
        for st in (self.stages[0], stage):
            if st.op.expr.where is not None:
                self.fail(
                    st,
                    f"'{st.name}' has a mask (where=); the mean and variance of an online pass "
                    "count every element of the axis",
                )
        source, at = self.folded_source(stage)
        difference = _squared(source)
        if difference is None:
            self.fail(
                stage,
                f"'{stage.name}' sums '{expr_str(source)}'; an online pass about the mean "
                "rescales only (x - mean) ** 2",
            )
        if not (isinstance(difference, Binary) and difference.op == "-"):
            self.fail(stage, f"in '{stage.name}', '{expr_str(difference)}' is not x - mean")
        if self._reads_top(difference.a) or not self._is_mean(difference.b):
            self.fail(
                stage,
                f"in '{stage.name}', '{expr_str(difference.b)}' is not the mean "
                f"{self.top.name}[...] / {expr_str(self.top.expr.axis[0].dom.extent)} (the "
                "sum divided by the extent of its axis)",
            )
        own = self._top_value(at, stage.op.expr.axis[0])
        if expr_str(difference.a) != expr_str(own):
            self.fail(
                stage,
                f"in '{stage.name}', '{expr_str(difference.a)}' is taken about the mean of "
                f"'{expr_str(own)}'; the one-pass form needs the values the mean is of",
            )
        return difference.a, at

    def _is_mean(self, e: Expr) -> bool:
        extent = self.top.expr.axis[0].dom.extent
        if isinstance(e, Binary) and e.op == "/" and self._is_top(e.a):
            d = e.b.value if isinstance(e.b, Cast) else e.b
            if isinstance(d, Const):
                return as_int(extent) is not None and float(d.value) == float(as_int(extent))
            return expr_str(d) == expr_str(extent)
        if isinstance(e, Binary) and e.op == "*":
            for read, c in ((e.a, e.b), (e.b, e.a)):
                known = as_int(extent)
                if self._is_top(read) and isinstance(c, Const) and known:
                    return abs(float(c.value) * known - 1.0) < 1e-6
        return False

    def rewrite(self, blocks: int, centred) -> list[Tensor]:
        top = self.top
        top_body: Reduce = top.expr
        j = top_body.axis[0]
        extent, start = j.dom.extent, j.dom.min
        sweep = self.sweep(blocks)
        name, steps, count = sweep.name, sweep.steps, sweep.count
        ops, states = sweep.ops, sweep.states
        step, block, inner = sweep.step, sweep.block, sweep.inner
        dtype = top_body.dtype

        def terms(b: Expr, reduce: Reduce, value: Expr, mapping: dict) -> Reduce:
            """The sum of `value` over block `b` (its key at a new reduce axis)."""
            r = IterVar(Var(inner, "int32", "reduce"), Range(const(0), const(blocks)), "reduce")
            key = start + b * blocks + r.var
            own = reduce.axis[0]
            inside = substitute(value, {**mapping, own: key, own.var: key})
            guard = logical("and", [b * blocks + r.var < extent])
            return Reduce(reduce.combiner, inside, (r,), guard, reduce.dtype)

        def size(b: Expr) -> Expr:
            """The elements of block `b` (the last may be short), as the sums' dtype."""
            return Cast(binary("min", const(blocks), extent - b * blocks), dtype)

        sums = _compute(
            f"{name}.{top.name}_block",
            [(block, count)] + _axes(top),
            lambda b, *a: terms(b, top_body, top_body.source, _mapping(top.axis, a)),
        )
        t_state = states[0]
        updates = [
            _compute(
                f"{name}.{top.name}_update",
                [(step, steps)] + _axes(top),
                lambda t, *a: t_state[(t - 1, *a)] + sums[(t - 1, *a)],
            )
        ]
        for k, (op, (x, at)) in enumerate(zip(ops[1:], centred), start=1):
            body: Reduce = op.expr

            def squares(b, *a, op=op, body=body, x=x, at=at):
                mapping = _mapping(op.axis, a)
                point = tuple(substitute(i, mapping) for i in at)
                difference = x - sums[(b, *point)] / size(b)  # about the block's own mean
                return terms(b, body, difference * difference, mapping)

            part = _compute(f"{name}.{op.name}_block", [(block, count)] + _axes(op), squares)

            def merged(t, *a, op=op, at=at, part=part, k=k):
                point = tuple(substitute(i, _mapping(op.axis, a)) for i in at)
                before = Cast((t - 1) * blocks, dtype)
                c = size(t - 1)
                shift = sums[(t - 1, *point)] / c - t_state[(t - 1, *point)] / before
                carried = shift * shift * before * c / (before + c)
                return (
                    states[k][(t - 1, *a)]
                    + part[(t - 1, *a)]
                    + select(t >= 2, carried, const(0, dtype))
                )

            updates.append(
                _compute(f"{name}.{op.name}_update", [(step, steps)] + _axes(op), merged)
            )
        return self.finish(sweep, updates, blocks)


def _squared(e: Expr) -> Expr | None:
    """The `d` of ``d * d`` or ``d ** 2``, or None."""
    if isinstance(e, Binary) and e.op == "*" and expr_str(e.a) == expr_str(e.b):
        return e.a
    if isinstance(e, Call) and e.name == "pow":
        power = e.args[1]
        if isinstance(power, Const) and float(power.value) == 2.0:
            return e.args[0]
    return None
