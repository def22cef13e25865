"""AutoTVM's ``tvm.autotvm.task.space``: the entities a template reads its knobs as, and the
fallback configuration TOPI's templates run with when no tuning log knows their workload.

The entities are schedlang's (`schedlang.tune.knobs`): a split's sizes are ``[-1, f1, ...]``
as AutoTVM's spaces list them, and its ``apply`` splits an axis into nested loops, outermost
first. A `FallbackConfigEntity` is a configuration being defined: each knob takes its first
choice when defined, as in AutoTVM, unless the template set it before (``cfg["tile"] =
SplitEntity(...)``); ``fallback_split`` then picks sizes under a template's limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ....errors import entry_point
from ....tune.knobs import AnnotateEntity, ChoiceEntity, Knob, Split, SplitEntity, TuneError
from ....tune.knobs import OrderEntity as ReorderEntity
from ....tune.space import Config, Space

__all__ = [
    "AnnotateEntity",
    "FallbackConfigEntity",
    "OtherOptionEntity",
    "ReorderEntity",
    "SplitEntity",
    "VirtualAxis",
    "get_factors",
]


@dataclass(frozen=True)
class VirtualAxis:
    """An axis of a given length that no loop has yet (``cfg.axis(n)``): what a template
    defines a knob over before it writes its compute."""

    length: int
    name: str = ""


@dataclass
class OtherOptionEntity:
    """A knob's value in a configuration being defined, which a template may change in place
    (TOPI's CUDA depthwise convolution sets ``cfg["unroll_explicit"].val = 0`` in its
    fallback), as AutoTVM's can."""

    val: object

    def __repr__(self) -> str:
        return repr(self.val)


def get_factors(n: int) -> list[int]:
    """The divisors of `n`, in increasing order."""
    return [f for f in range(1, n + 1) if n % f == 0]


class FallbackConfigEntity(Config):
    """The configuration of a workload no tuning log knows: every knob its first choice, or
    what the template set it to (TOPI's templates set theirs from the workload's shape)."""

    is_fallback = True

    def __init__(self) -> None:
        super().__init__(Space())
        self._entities: dict[str, object] = {}

    def __repr__(self) -> str:
        return f"FallbackConfigEntity({self._entities})"

    @staticmethod
    def axis(var: object) -> VirtualAxis:
        """A virtual axis of `var`'s length (an int or an op's axis)."""
        from ....tune.space import _extent

        return VirtualAxis(_extent(var))

    reduce_axis = axis

    def _define(self, knob: Knob) -> None:
        """A knob defined again, or set before it is defined, keeps its entity (the compute
        and the schedule of one workload share their configuration)."""
        if knob.name in self._entities:
            return
        self._defined.add(knob.name)
        self.space.add(knob)
        entity = knob.entity(0)
        if isinstance(entity, ChoiceEntity):
            entity = OtherOptionEntity(entity.val)
        self._entities[knob.name] = entity

    def define_split(self, name: str, axis: object, policy: str = "factors", **kwargs) -> None:
        if isinstance(axis, VirtualAxis):
            axis = axis.length
        super().define_split(name, axis, policy, **kwargs)

    @entry_point
    def __getitem__(self, name: str) -> object:
        if name not in self._entities:
            raise TuneError(f"no knob {name!r} is defined or set (define it before reading it)")
        return self._entities[name]

    def __setitem__(self, name: str, entity: object) -> None:
        self._entities[name] = entity

    def __contains__(self, name: str) -> bool:
        return name in self._entities

    @property
    def knobs(self) -> dict[str, object]:
        from ....tune.space import _json

        return {name: _json(entity) for name, entity in self._entities.items()}

    @entry_point
    def fallback_split(self, name: str, constraints) -> None:
        """Split knob `name`'s sizes, innermost first: each the largest divisor of what is
        left of the extent that is at most its constraint (-1: no limit)."""
        knob = self.space.knobs.get(name)
        if not isinstance(knob, Split):
            raise TuneError(f"fallback_split: {name!r} is not a split knob defined here")
        parts = len(knob.choices[0])
        if len(constraints) != parts:
            raise TuneError(
                f"fallback_split: split {name!r} has {parts} sizes, {len(constraints)} "
                "constraints were given"
            )
        if knob.extent is None:
            raise TuneError(f"fallback_split: split {name!r} has a symbolic extent")
        left, sizes = knob.extent, [0] * parts
        for k in reversed(range(parts)):
            limit = constraints[k]
            fitting = [f for f in get_factors(left) if limit == -1 or f <= limit]
            if not fitting:
                raise TuneError(
                    f"fallback_split: no size of split {name!r} fits constraint {limit}"
                )
            sizes[k] = fitting[-1]
            left //= fitting[-1]
        self._entities[name] = SplitEntity(sizes)

    @entry_point
    def fallback_with_reference_log(self, ref_log) -> None:
        """AutoTVM's fallback from configurations tuned for other workloads (TopHub's): the
        record whose split knobs' products share the most divisors with this workload's
        extents lends its splits (as `fallback_split`'s limits) and its other knobs. Records
        are ``(input, result)`` pairs whose ``input.config[name]`` are entities; an empty log
        (`tophub` has none) leaves the configuration as it is."""
        splits = {
            name: knob
            for name, knob in self.space.knobs.items()
            if isinstance(knob, Split) and knob.extent is not None
        }
        best, best_score = None, 0.0
        for given, _ in ref_log:
            score = 0.0
            for name, knob in splits.items():
                ours = get_factors(knob.extent)
                theirs = get_factors(math.prod(given.config[name].size))
                score += len(set(ours).intersection(theirs)) / len(ours)
            if score > best_score:
                best, best_score = given.config, score
        if best is None:
            return
        for name in splits:
            self.fallback_split(name, [-1, *best[name].size[1:]])
        for name in self.space.knobs:
            if name not in splits:
                self._entities[name] = best[name]
