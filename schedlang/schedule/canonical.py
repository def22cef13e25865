"""A schedule, its algorithm and a build's arguments as canonical text, for the build cache.

Two builds whose texts are equal make the same kernel, so the text can key compiled code
across processes: a schedule *is* its records (`records`) applied to the algorithm's ops, and
both are frozen dataclasses of values, variables and ops. The text lists every field of every
node, except the source locations kept for messages (so the same schedule written in another
file or notebook cell still matches). Variables and ops are compared by identity in schedlang
(two sizes named ``n`` are two sizes), so each is written in full where first met and as its
number after that. Anything that is not such a node (a function, an object of unknown kind)
makes the build uncacheable rather than keyed by something partial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..ir.expr import Var
from ..ir.tensor import Operation, Outputs, Tensor
from .schedule import Schedule

_SKIPPED = frozenset({"loc", "attrs"})  # where the user wrote it; annotations of an op
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


class Uncacheable(Exception):
    """The schedule holds something the canonical text cannot state exactly."""


def canonical_text(s: Schedule, args: Sequence[Tensor]) -> str:
    """The text of building `s` over `args` (see the module); Uncacheable if there is none."""
    writer = _Writer()
    try:
        writer.write(("roots", s.roots, "records", tuple(s.records), "args", tuple(args)))
    except RecursionError:  # an expression nested deeper than Python's stack
        raise Uncacheable("the algorithm's expressions are nested too deeply") from None
    return "".join(writer.parts)


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.numbers: dict[int, int] = {}
        self.alive: list[object] = []  # keeps numbered objects' ids from being reused

    def write(self, value: object) -> None:
        out = self.parts.append
        if isinstance(value, _SCALARS):
            out(f"{type(value).__name__}:{value!r};")
        elif isinstance(value, (tuple, list)):
            out(f"{type(value).__name__}[")
            for item in value:
                self.write(item)
            out("]")
        elif isinstance(value, (Var, Operation)) and id(value) in self.numbers:
            out(f"@{self.numbers[id(value)]};")
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            if isinstance(value, (Var, Operation)):
                self.numbers[id(value)] = len(self.numbers)
                self.alive.append(value)
            kind = type(value)
            out(f"{kind.__module__}.{kind.__qualname__}(")
            for field in dataclasses.fields(value):
                if field.name not in _SKIPPED:
                    out(f"{field.name}=")
                    self.write(getattr(value, field.name))
            out(")")
        elif isinstance(value, Outputs):  # its ops refer back to it: numbered when met
            out("Outputs(")
            self.write(value.name)
            self.write(value.ops)
            out(")")
        elif isinstance(value, np.generic):
            out(f"{value.dtype}:{value.item()!r};")
        else:
            raise Uncacheable(f"a {type(value).__name__} in the schedule has no canonical text")
