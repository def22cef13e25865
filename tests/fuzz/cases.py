"""What the fuzzer's algorithm families draw and give: extents (`Sizes`), and the algorithm
ready to schedule (`Case`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

import schedlang as sl
from schedlang.ir.tensor import ComputeOp

EXTENTS = (1, 2, 3, 4, 5, 7, 8, 11, 13, 16)


@dataclass
class Case:
    """An algorithm ready to schedule: its inputs and outputs, the intermediate stages to
    store in arguments too (`stored`), and the value of each symbolic size, by name. Where
    those sizes are ones the algorithm cannot run at, `refusal` is the pattern of the error
    every kernel (a `LaunchError`) and the reference (an `AlgorithmError`) must give. Where
    the algorithm reads outside a tensor, `lowering_refusal` is the pattern of the
    `AlgorithmError` every build must give unless another error comes first. `checked` lists
    the tally keys of refusals the family checked itself while defining the algorithm."""

    family: str
    inputs: list[sl.Tensor]
    outputs: list[sl.Tensor]
    sizes: dict[str, int] = field(default_factory=dict)
    stored: list[sl.Tensor] = field(default_factory=list)
    refusal: str | None = None
    lowering_refusal: str | None = None
    checked: list[str] = field(default_factory=list)

    @property
    def computed(self) -> list[sl.Tensor]:
        """The kernel's arguments after the inputs: outputs, then stored intermediates."""
        return self.outputs + self.stored

    def describe(self) -> str:
        shapes = ", ".join(f"{t.name}{list(map(str, t.shape))}" for t in self.inputs)
        stored = f" stored={[t.name for t in self.stored]}" if self.stored else ""
        return f"{self.family}({shapes}) sizes={self.sizes}{stored}"


def intermediates(case: Case) -> list[sl.Tensor]:
    """The float32 stages between the inputs and the outputs (the arrays of the fuzzer's
    arguments are float32)."""
    found: list[sl.Tensor] = []
    seen = {t.op for t in case.outputs}
    stack = list(case.outputs)
    while stack:
        for t in stack.pop().op.input_tensors:
            if t.op in seen:
                continue
            seen.add(t.op)
            stack.append(t)
            if isinstance(t.op, ComputeOp) and t.dtype == "float32":
                found.append(t)
    return found


class Sizes:
    """Draws extents; each is an int or, now and then, a fresh `sl.var` whose value is kept."""

    def __init__(self, data, symbolic: bool) -> None:
        self.data = data
        self.symbolic = symbolic
        self.values: dict[str, int] = {}

    def extent(self, low: int = 1, high: int = 16) -> int | sl.Var:
        value = self.data.draw(st.sampled_from([n for n in EXTENTS if low <= n <= high]))
        if self.symbolic and self.data.draw(st.integers(0, 2)) == 0:
            var = sl.var(f"n{len(self.values)}")
            self.values[var.name] = value
            return var
        return value
