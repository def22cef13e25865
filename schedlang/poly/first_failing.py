"""The first step of a loop at which a condition inside it may fail for some thread.

Asked by `loopir.loops.full_steps`, which splits a loop of warpgroup products there: each
condition is a guard or select of the loop's body, with the loops around it (inside the loop,
and the threads'); the loops around the loop are parameters, their ranges what is known of
them. A condition fails at a step where some value of its loops makes it false; one that fails
at every step (a thread's own test, ``lane == 0``) is no guide to where the loop changes, and
is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir.expr import Binary, Expr, Var
from ..ir.visit import walk
from .affine import NonAffine, aff_text, cond_text


@dataclass(frozen=True)
class Span:
    """A loop: its variable runs over ``[min, min + extent)``."""

    var: Var
    min: Expr
    extent: Expr


@dataclass
class FirstFailing:
    """`first`: the first failing step (the loop's end where none fails), a function of the
    parameters `params` (isl name -> variable) known to satisfy `context`; `decided`: the
    indices of the conditions that hold at every step before it."""

    first: isl.PwAff
    context: isl.Set
    params: dict[str, Var]
    decided: list[int]


def first_failing(
    step: Span, conds: list[tuple[Expr, list[Span]]], outer: dict[Var, Span]
) -> FirstFailing | None:
    """Where the conditions `conds` of loop `step`'s body start to fail (module doc); None
    where none of them holds at every thread at any step."""
    names = _Names(step.var)
    failing = None
    decided = []
    whole = _range(step, names)
    for k, (cond, around) in enumerate(conds):
        bad = _failing(step, cond, around, names)
        if bad is None or bad.is_equal(whole):
            continue
        decided.append(k)
        failing = bad if failing is None else failing.union(bad)
    if failing is None:
        return None
    first = failing.union(_range(step, names, last=True)).dim_min(0)
    context = _context(names, outer)
    return FirstFailing(first.gist_params(context).coalesce(), context, names.params, decided)


class _Names:
    """isl names: the loop's variable ``t``, the loops around a condition ``v<k>``, anything
    else a parameter ``p<k>``."""

    def __init__(self, step: Var) -> None:
        self.step = step
        self.params: dict[str, Var] = {}
        self._by_var: dict[Var, str] = {}

    def of(self, loops: list[Span], exprs: list[Expr]) -> dict[Var, str]:
        names = {self.step: "t"}
        names.update({s.var: f"v{k}" for k, s in enumerate(loops)})
        for v in {x for e in exprs for x in walk(e) if isinstance(x, Var)} - set(names):
            if v not in self._by_var:
                self._by_var[v] = f"p{len(self._by_var)}"
                self.params[self._by_var[v]] = v
            names[v] = self._by_var[v]
        return names

    def header(self) -> str:
        return f"[{', '.join(self.params)}] ->"


def _end(s: Span) -> Expr:
    return Binary("+", s.min, s.extent, s.min.dtype)


def _failing(step: Span, cond: Expr, around: list[Span], names: _Names) -> isl.Set | None:
    """The steps at which `cond` fails for some value of the loops `around`."""
    exprs = [cond, step.min, step.extent] + [x for s in around for x in (s.min, s.extent)]
    named = names.of(around, exprs)
    try:
        ranges = [
            f"{aff_text(s.min, named)} <= {named[s.var]} < {aff_text(_end(s), named)}"
            for s in around
        ]
        text = cond_text(cond, named)
    except NonAffine:
        return None
    inner = ", ".join(named[s.var] for s in around)
    where = " and ".join([*ranges, f"not ({text})"])
    bad = isl.Set(f"{names.header()} {{ [t] : exists ({inner} : {where}) }}")
    return bad.intersect(_range(step, names))


def _range(step: Span, names: _Names, last: bool = False) -> isl.Set:
    """The loop's steps (or, with `last`, the step after them)."""
    named = names.of([], [step.min, step.extent])
    low, high = aff_text(step.min, named), aff_text(_end(step), named)
    cons = f"t = {high}" if last else f"{low} <= t < {high}"
    return isl.Set(f"{names.header()} {{ [t] : {cons} }}")


def _context(names: _Names, outer: dict[Var, Span]) -> isl.Set:
    """What the parameters are known to satisfy: those that are loops around, their ranges
    (where those are constants)."""
    cons = ["0 = 0"]
    for name, var in names.params.items():
        loop = outer.get(var)
        if loop is None:
            continue
        try:
            low, count = (aff_text(e, {}) for e in (loop.min, loop.extent))
        except (NonAffine, KeyError):
            continue  # a bound of other variables: left out of what is known
        cons.append(f"{low} <= {name} < {low} + {count}")
    return isl.Set(f"{names.header()} {{ : {' and '.join(cons)} }}")


__all__ = ["FirstFailing", "Span", "first_failing"]
