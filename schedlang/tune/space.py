"""A template's space of configurations, and the `Config` a template reads its knobs from.

The space is found by running the template once: each knob it defines is recorded, and the
template goes on with the first choice of each (as AutoTVM's ``ConfigSpace`` does). Every later
run reads the chosen entity instead, and must define the same knobs with the same choices (a
space that changed with the choices could not be searched or logged). A configuration is one
index per knob; the space numbers configurations as a mixed-radix number, the first knob
varying slowest, so that a grid search walks it in the order the knobs were defined.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ..errors import entry_point
from ..ir.expr import Const
from ..ir.tensor import IterVar
from .knobs import (
    Annotate,
    Choice,
    Knob,
    Order,
    Split,
    SplitEntity,
    TuneError,
    annotate_choices,
    order_choices,
    split_choices,
)


class Space:
    """Knobs by name, in the order the template defines them."""

    def __init__(self) -> None:
        self.knobs: dict[str, Knob] = {}

    def __len__(self) -> int:
        return math.prod(len(k) for k in self.knobs.values())

    def __iter__(self) -> Iterator[Knob]:
        return iter(self.knobs.values())

    def add(self, knob: Knob) -> None:
        if knob.name in self.knobs:
            raise TuneError(f"the template defines knob {knob.name!r} twice")
        self.knobs[knob.name] = knob

    def indices(self, number: int) -> dict[str, int]:
        """The choice of each knob in configuration `number`."""
        if not 0 <= number < len(self):
            raise TuneError(f"configuration {number} is outside the space (0..{len(self) - 1})")
        chosen = {}
        for knob in reversed(self.knobs.values()):
            number, chosen[knob.name] = divmod(number, len(knob))
        return {name: chosen[name] for name in self.knobs}

    def number(self, indices: Mapping[str, int]) -> int:
        number = 0
        for knob in self.knobs.values():
            number = number * len(knob) + indices[knob.name]
        return number

    def values(self, number: int) -> dict[str, object]:
        """The chosen value of each knob in configuration `number` (JSON values)."""
        return {
            name: _json(self.knobs[name].choices[k]) for name, k in self.indices(number).items()
        }

    def number_of(self, values: Mapping[str, object]) -> int:
        """The configuration whose knobs take `values` (as `values` or a log gives them)."""
        missing = [name for name in self.knobs if name not in values]
        if missing:
            raise TuneError(f"no value for knob(s) {', '.join(map(repr, missing))}")
        return self.number({name: k.index(values[name]) for name, k in self.knobs.items()})

    def describe(self) -> str:
        lines = [f"ConfigSpace (len={len(self)}, space_map="]
        for k, knob in enumerate(self.knobs.values()):
            lines.append(f"   {k:>2} {knob.name}: {knob.describe()} len={len(knob)}")
        return "\n".join(lines) + ")"

    __repr__ = __str__ = describe

    def identity(self) -> str:
        """Every knob with every choice, for the tuning cache's key (`describe` abbreviates)."""
        return repr([(type(k).__name__, k.name, k.choices) for k in self.knobs.values()])


class Config:
    """What a template reads its knobs from: defining them (the first run, which finds the
    space: each knob then gives its first choice) or reading one configuration's choices.

    schedlang's form returns what was chosen: ``i0, i1 = cfg.split("tile_i", s[C], i)``,
    ``order = cfg.choice("order", ["ikj", "kij"])``. AutoTVM's form defines, then reads:
    ``cfg.define_split("tile_y", y, num_outputs=2)`` and ``cfg["tile_y"].apply(s, C, y)``.
    """

    def __init__(self, space: Space, chosen: Mapping[str, int] | None = None) -> None:
        self.space = space
        self.chosen = None if chosen is None else dict(chosen)
        self.flop = 0.0
        self._defined: set[str] = set()

    def __repr__(self) -> str:
        if self.chosen is None:
            return f"Config(finding the space: {len(self.space.knobs)} knobs so far)"
        return f"Config({self.space.values(self.space.number(self.chosen))})"

    @property
    def is_fallback(self) -> bool:
        """True while the space is being found (AutoTVM's name)."""
        return self.chosen is None

    def _define(self, knob: Knob) -> None:
        if knob.name in self._defined:
            raise TuneError(f"the template defines knob {knob.name!r} twice")
        self._defined.add(knob.name)
        if self.chosen is None:
            self.space.add(knob)
            return
        known = self.space.knobs.get(knob.name)
        if known is None or known.choices != knob.choices:
            raise TuneError(
                f"knob {knob.name!r} is defined with other choices than when the space was "
                "found; a template must define the same knobs with the same choices for every "
                "configuration (compute a knob's choices from the arguments, not other knobs)"
            )

    @entry_point
    def __getitem__(self, name: str) -> object:
        knob = self.space.knobs.get(name)
        if knob is None or name not in self._defined:
            raise TuneError(f"no knob {name!r} is defined (define it before reading it)")
        return knob.entity(0 if self.chosen is None else self.chosen[name])

    def __contains__(self, name: str) -> bool:
        return name in self._defined

    @property
    def knobs(self) -> dict[str, object]:
        """Each defined knob's chosen value."""
        return {name: _json(self[name]) for name in self.space.knobs if name in self._defined}

    # AutoTVM's form ---------------------------------------------------------------------

    @entry_point
    def define_knob(self, name: str, candidate: Sequence) -> None:
        if not len(candidate):
            raise TuneError(f"knob {name!r} has no candidates")
        choices = tuple(_frozen(c) for c in candidate)
        try:
            json.dumps(choices)
        except TypeError:
            raise TuneError(
                f"knob {name!r}: its choices must be numbers, strings, booleans or lists of "
                f"them (the log writes them as JSON), got {list(candidate)!r}"
            ) from None
        self._define(Choice(name, choices))

    @entry_point
    def define_split(
        self,
        name: str,
        axis: object,
        policy: str = "factors",
        num_outputs: int = 2,
        max_factor: int | None = None,
        filter=None,  # noqa: A002 (AutoTVM's name)
        candidate: Sequence | None = None,
        **_ignored: object,
    ) -> None:
        extent = _extent(axis)
        if candidate is not None:
            policy = "candidate"
        choices = split_choices(name, extent, num_outputs, policy, max_factor, candidate, filter)
        self._define(Split(name, choices, extent, policy))

    @entry_point
    def define_reorder(
        self, name: str, axes: Sequence, policy: str = "all", candidate=None, **_: object
    ) -> None:
        self._define(Order(name, order_choices(name, len(axes), policy, candidate)))

    @entry_point
    def define_annotate(self, name: str, axes: Sequence, policy: str, **_: object) -> None:
        self._define(Annotate(name, annotate_choices(name, len(axes), policy)))

    def add_flop(self, flop: float) -> None:
        """The work of one run, as the template counts it (the AutoTVM tuners report GFLOP/s
        with it; without it they count the algorithm's own)."""
        self.flop += float(flop)

    # schedlang's form -------------------------------------------------------------------

    @entry_point
    def choice(self, name: str, values: Sequence) -> object:
        """One of `values`."""
        self.define_knob(name, values)
        return self[name].val

    @entry_point
    def flag(self, name: str) -> bool:
        """False or True."""
        return self.choice(name, [False, True])

    @entry_point
    def split(
        self,
        name: str,
        stage,
        axis: object,
        parts: int = 2,
        policy: str = "power2",
        max_factor: int | None = None,
        candidates: Sequence | None = None,
    ) -> list:
        """`axis` of `stage` split into `parts` loops, outermost first; their sizes are the
        knob. Powers of two by default: schedlang guards the edge where they do not divide."""
        extent = _extent(axis, stage)
        if candidates is not None:
            policy = "candidate"
        choices = split_choices(name, extent, parts, policy, max_factor, candidates, None)
        self._define(Split(name, choices, extent, policy))
        entity = self[name]
        assert isinstance(entity, SplitEntity)
        return entity.apply(None, stage, axis)

    @entry_point
    def order(self, name: str, items: Sequence, candidates: Sequence | None = None) -> list:
        """`items` (axes, names, anything) in one of their orders: every permutation, or the
        `candidates` (each a list of positions into `items`)."""
        policy = "all" if candidates is None else "candidate"
        perms = order_choices(name, len(items), policy, candidates)
        if all(isinstance(item, (str, int)) for item in items):  # logged as the items
            self._define(Order(name, tuple(tuple(items[k] for k in p) for p in perms)))
            return list(self[name].perm)
        self._define(Order(name, perms))
        return [items[k] for k in self[name].perm]


def _extent(axis: object, stage=None) -> int | None:
    """The constant extent of `axis`: an int, an op's IterVar, or a loop of `stage`."""
    if isinstance(axis, bool):
        raise TuneError(f"{axis!r} is not an axis")
    if isinstance(axis, int):
        return axis
    if isinstance(axis, IterVar):
        extent = axis.dom.extent
        return extent.value if isinstance(extent, Const) else None
    if stage is not None:
        from ..schedule.relations import leaf_form

        resolved = stage._axis(axis, "split", "")
        extent = leaf_form(
            stage, [a for a in stage.leaves if a.kind == resolved.kind], resolved.kind
        ).extents[resolved]
        return extent.value if isinstance(extent, Const) else None
    raise TuneError(
        f"define_split: cannot tell the extent of {axis!r}; pass one of the op's axes "
        "(s[C].op.axis), an integer, or candidate=[[...], ...]"
    )


def _frozen(value: object) -> object:
    """Lists as tuples, so that choices compare and hash; numpy's scalars as Python's, so
    that the log can write them."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _json(value: object) -> object:
    """A choice or entity as a JSON value."""
    for attribute in ("val", "size", "perm", "anns"):
        if hasattr(value, attribute):
            value = getattr(value, attribute)
            break
    if isinstance(value, (tuple, list)):
        return [_json(v) for v in value]
    return value
