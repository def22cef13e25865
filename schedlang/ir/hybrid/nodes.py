"""What a hybrid script (TE's ``te.hybrid.script``) is once parsed: statements over tensors,
and the op whose outputs it writes.

A script is imperative: loops, conditions and stores into its output tensors, in program
order. Its statements are kept as such (TE's ProducerStore and ProducerRealize play the same
part): `Store` writes an element of a tensor, `Local` gives a name assigned more than once
(or updated with ``+=``) a one-element tensor for the statements after it in its block.
Reads are the algorithm's `Read` nodes, loop variables are `Var` of kind ``"loop"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..expr import Expr, Var
from ..tensor import AlgorithmError, IterVar, PlaceholderOp, Range, Tensor

LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "bound")


class HStmt:
    """Base of a script's statements."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class Store(HStmt):
    tensor: Tensor
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Loop(HStmt):
    """``for var in range(min, min + extent)`` run as `kind`; `thread` names the hardware
    index of a ``"bound"`` loop."""

    var: Var
    min: Expr
    extent: Expr
    kind: str
    body: tuple[HStmt, ...]
    thread: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Cond(HStmt):
    cond: Expr
    then: tuple[HStmt, ...]
    otherwise: tuple[HStmt, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Local(HStmt):
    """`tensor` (a scalar variable or an ``allocate``), alive during `body`."""

    tensor: Tensor
    scope: str
    body: tuple[HStmt, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Check(HStmt):
    """An ``assert``: checked when the script runs as Python, on arrays."""

    cond: Expr
    message: str


class HybridCall:
    """One call of a script on tensors: the function and what it was called with (to run it
    as Python on arrays), its inputs, its statements, and its outputs (`ops`, in the order
    the script returns them). The parser fills it in; the ops exist from ``output_tensor``
    on, which is why the call is not frozen."""

    __slots__ = ("name", "func", "args", "inputs", "body", "ops", "axis")

    def __init__(self, name: str, func: Callable, args: tuple) -> None:
        self.name = name
        self.func = func
        self.args = args
        self.inputs: tuple[Tensor, ...] = ()
        self.body: tuple[HStmt, ...] = ()
        self.ops: tuple[HybridOp, ...] = ()
        self.axis: tuple[IterVar, ...] = ()  # the loops of `body`, outer first


@dataclass(frozen=True, slots=True, eq=False)
class HybridOp(PlaceholderOp):
    """An output of a hybrid script's call: for the stages that read it, an input like a
    placeholder, which the call's statements compute first, whole."""

    call: HybridCall

    def output(self, index: int = 0) -> Tensor:
        if not 0 <= index < len(self.call.ops):
            raise AlgorithmError(f"'{self.call.name}' has {len(self.call.ops)} outputs")
        return Tensor(self.call.ops[index], index)

    @property
    def value_index(self) -> int:
        return self.call.ops.index(self)

    @property
    def num_outputs(self) -> int:
        return len(self.call.ops)

    @property
    def outputs(self) -> HybridCall:
        """The outputs computed together with this one (a schedule gives them one stage)."""
        return self.call

    @property
    def axis(self) -> tuple[IterVar, ...]:
        """Every loop of the script, outer first (TE's HybridOp axes): split, fuse, reorder
        and annotate them as a compute's."""
        return self.call.axis

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        return ()

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        return self.call.inputs

    inputs = input_tensors

    @property
    def body(self) -> tuple[HStmt, ...]:
        return self.call.body


def loop_itervars(body: tuple[HStmt, ...]) -> tuple[IterVar, ...]:
    """The loops of `body` as IterVars, each before the loops inside it."""
    found: list[IterVar] = []

    def visit(stmts: tuple[HStmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, Loop):
                found.append(IterVar(s.var, Range(s.min, s.extent), "data"))
                visit(s.body)
            elif isinstance(s, Cond):
                visit(s.then)
                visit(s.otherwise)
            elif isinstance(s, Local):
                visit(s.body)

    visit(body)
    return tuple(found)
