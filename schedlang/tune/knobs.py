"""The knobs of a schedule template: each a named, finite list of choices.

A knob's choices are JSON values (numbers, strings, booleans and lists of them), so that a log
written by one process is read by another and a trial is named by its choices alone. Four kinds
cover what AutoTVM templates ask for, in its own names where they exist:

- `Choice` (``define_knob``): any listed values;
- `Split` (``define_split``): the sizes of the loops an axis is split into;
- `Order` (``define_reorder``): permutations of some axes;
- `Annotate` (``define_annotate``): for each axis, unrolled, vectorized or left alone.

Each knob makes an *entity* for one of its choices: what a template reads (``cfg["k"].val``,
``cfg["tile"].apply(s, C, axis)``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import SchedlangError, ScheduleError

SPLIT_POLICIES = ("factors", "power2", "verbose", "candidate")
ANNOTATIONS = {
    "try_unroll": ("none", "unroll"),
    "try_vec": ("none", "vec"),
    "try_unroll_vec": ("none", "unroll", "vec"),
}


class TuneError(ScheduleError):
    """A template or a tuning run asked for something it cannot have; names the knob."""


class Invalid(SchedlangError):
    """Raised by a template for a configuration it knows is pointless or impossible (a tile
    its threads cannot divide, too many registers): recorded as illegal, with its message,
    and never built (AutoTVM's ``InstantiationError``)."""


@dataclass(frozen=True)
class Knob:
    """A named list of choices; `entity` wraps one for the template."""

    name: str
    choices: tuple

    def __len__(self) -> int:
        return len(self.choices)

    def entity(self, index: int) -> object:
        return ChoiceEntity(self.choices[index])

    def index(self, value: object) -> int:
        """The position of choice `value` (as a log writes it: lists for tuples)."""
        wanted = _plain(value)
        for k, choice in enumerate(self.choices):
            if _plain(choice) == wanted:
                return k
        raise TuneError(f"knob {self.name!r} has no choice {value!r}")

    def describe(self) -> str:
        shown = ", ".join(repr(c) for c in self.choices[:6])
        return f"{type(self).__name__}([{shown}{', ...' if len(self) > 6 else ''}])"


class Choice(Knob):
    """Any listed values (``cfg.define_knob``)."""


@dataclass(frozen=True)
class ChoiceEntity:
    val: object

    def __repr__(self) -> str:
        return repr(self.val)


@dataclass(frozen=True)
class Split(Knob):
    """Sizes ``[-1, f1, ..., fk]`` of the loops one axis is split into, outermost first; -1 is
    the rest (the outer loop's extent, rounded up: schedlang guards the edge)."""

    extent: int | None = None
    policy: str = "factors"

    def entity(self, index: int) -> SplitEntity:
        return SplitEntity(list(self.choices[index]))

    def describe(self) -> str:
        extent = "symbolic" if self.extent is None else self.extent
        parts = len(self.choices[0]) if self.choices else 0
        return f"Split(policy={self.policy}, extent={extent}, parts={parts})"


@dataclass(frozen=True)
class SplitEntity:
    size: list

    def apply(self, s, op, axis) -> list:
        """The split applied to `axis` of stage `op` (a stage, op or tensor) of `s`: the axes,
        outermost first (AutoTVM's ``SplitEntity.apply``)."""
        stage = _stage(s, op)
        axes = []
        for k in range(1, len(self.size)):
            outer, axis = stage.split(axis, factor=math.prod(self.size[k:]))
            axes.append(outer)
        return [*axes, axis]

    def __repr__(self) -> str:
        return f"sp{self.size}"


@dataclass(frozen=True)
class Order(Knob):
    """A permutation of `count` axes, as their positions."""

    def entity(self, index: int) -> OrderEntity:
        return OrderEntity(list(self.choices[index]))


@dataclass(frozen=True)
class OrderEntity:
    perm: list

    def apply(self, s, op, axes: Sequence) -> list:
        """`axes` reordered by the permutation (AutoTVM's ``ReorderEntity.apply``)."""
        ordered = [axes[k] for k in self.perm]
        _stage(s, op).reorder(*ordered)
        return ordered

    def __repr__(self) -> str:
        return f"re{self.perm}"


@dataclass(frozen=True)
class Annotate(Knob):
    """For each of some axes: ``"none"``, ``"unroll"`` or ``"vec"``."""

    def entity(self, index: int) -> AnnotateEntity:
        return AnnotateEntity(list(self.choices[index]))


@dataclass(frozen=True)
class AnnotateEntity:
    anns: list

    def apply(self, s, op, axes: Sequence, **_ignored) -> list:
        """Each axis unrolled or vectorized as chosen (AutoTVM's ``AnnotateEntity.apply``; its
        size limits are left to schedlang, which refuses what it cannot do)."""
        stage = _stage(s, op)
        for axis, kind in zip(axes, self.anns):
            if kind == "unroll":
                stage.unroll(axis)
            elif kind == "vec":
                stage.vectorize(axis)
        return list(axes)

    def __repr__(self) -> str:
        return f"an{self.anns}"


def split_choices(
    name: str,
    extent: int | None,
    parts: int,
    policy: str,
    max_factor: int | None,
    candidates: Sequence[Sequence[int]] | None,
    keep: Callable[[SplitEntity], bool] | None,
) -> tuple[tuple[int, ...], ...]:
    """Every ``(-1, f1, ..., f_{parts-1})`` the policy allows: with "factors" the inner sizes
    multiply to a divisor of the extent, with "power2" they are powers of two, with "verbose"
    either; their product never exceeds the extent. `candidates` lists them instead."""
    if policy not in SPLIT_POLICIES:
        raise TuneError(f"split {name!r}: unknown policy {policy!r}; use one of {SPLIT_POLICIES}")
    if not isinstance(parts, int) or parts < 2:
        raise TuneError(f"split {name!r}: num_outputs must be an integer >= 2, got {parts!r}")
    if candidates is not None or policy == "candidate":
        if not candidates:
            raise TuneError(f"split {name!r}: policy 'candidate' needs a list of sizes")
        chosen = []
        for sizes in candidates:
            sizes = list(sizes)
            if len(sizes) != parts:
                raise TuneError(f"split {name!r}: candidate {sizes} has not {parts} sizes")
            chosen.append((-1, *(int(f) for f in sizes[1:])))
    else:
        if extent is None:
            raise TuneError(
                f"split {name!r}: the axis has a symbolic extent; give the sizes to try "
                "(candidate=[[-1, 16], [-1, 32], ...])"
            )
        limit = extent if max_factor is None else min(extent, max_factor)
        inner = set()
        if policy in ("factors", "verbose"):
            inner |= {f for f in range(1, limit + 1) if extent % f == 0}
        if policy in ("power2", "verbose"):
            inner |= {1 << p for p in range(limit.bit_length()) if 1 << p <= limit}
        chosen = []
        for sizes in itertools.product(sorted(inner), repeat=parts - 1):
            product = math.prod(sizes)
            if product > extent or (policy == "factors" and extent % product):
                continue
            chosen.append((-1, *sizes))
    if keep is not None:
        chosen = [c for c in chosen if keep(SplitEntity(list(c)))]
    if not chosen:
        raise TuneError(f"split {name!r}: no sizes are left to try")
    return tuple(chosen)


def order_choices(name: str, count: int, policy: str, candidates) -> tuple[tuple[int, ...], ...]:
    if policy == "all":
        return tuple(itertools.permutations(range(count)))
    if policy == "identity":
        return (tuple(range(count)),)
    if policy == "candidate" and candidates:
        chosen = []
        for perm in candidates:
            if sorted(perm) != list(range(count)):
                raise TuneError(f"reorder {name!r}: {list(perm)} is not an order of {count} axes")
            chosen.append(tuple(perm))
        return tuple(chosen)
    raise TuneError(
        f"reorder {name!r}: policy {policy!r} unknown (or no candidate given); use 'all', "
        "'identity' or 'candidate' with candidate=[[...], ...]"
    )


def annotate_choices(name: str, count: int, policy: str) -> tuple[tuple[str, ...], ...]:
    if policy not in ANNOTATIONS:
        raise TuneError(
            f"annotate {name!r}: policy {policy!r} unknown; use one of {tuple(ANNOTATIONS)}"
        )
    return tuple(itertools.product(ANNOTATIONS[policy], repeat=count))


def _stage(s, op):
    """The stage of `op` (a Stage, an Operation or a Tensor) in schedule `s`."""
    from ..schedule.stage import Stage

    return op if isinstance(op, Stage) else s[op]


def _plain(value: object) -> object:
    """`value` as JSON gives it back: tuples become lists."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value
