"""The loop IR: what the polyhedral layer produces, `sl.lower` prints and code generators consume.

Expressions are the algorithm's expression nodes (`schedlang.ir.expr`) plus `Load` from a
`Buffer`; tensor reads (`Read`) never appear here. Statements are frozen dataclasses with tuple
children. A loop's `kind` says how it runs:

- ``"serial"``, ``"unrolled"``, ``"vectorized"``, ``"parallel"`` (CPU threads);
- ``"bound"``: the loop *is* a hardware index; `thread` is ``"blockIdx.x"`` ... ``"threadIdx.z"``;
  its `min` is 0 and the loop variable equals the hardware index (a guard inside handles tails);
- ``"vthread"``: a virtual thread (executed by one real thread, interleaved; see TE).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import CommReducer, Expr, Var
from ..schedule.stage import HARDWARE_TAGS

LOOP_KINDS = ("serial", "unrolled", "vectorized", "parallel", "bound", "vthread")
SCOPES = ("global", "shared", "local")
THREAD_TAGS = tuple(tag for tag in HARDWARE_TAGS if tag != "vthread")


@dataclass(frozen=True, slots=True, eq=False)
class Buffer:
    """A region of memory. `strides` are in elements (row-major with padding from
    ``storage_align``); `None` means compact row-major."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str
    scope: str = "global"
    strides: tuple[Expr, ...] | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Load(Expr):
    buffer: Buffer
    indices: tuple[Expr, ...]
    dtype: str

    def sl_str(self, expr_str) -> str:
        """How `schedlang.ir.printer.expr_str` prints this node."""
        return f"{self.buffer.name}[{', '.join(expr_str(i) for i in self.indices)}]"


class Stmt:
    """Base of statements."""

    __slots__ = ()

    def __str__(self) -> str:
        from .printer import stmt_str

        return stmt_str(self)


@dataclass(frozen=True, slots=True, eq=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    """``for var in [min, min + extent)``."""

    var: Var
    min: Expr
    extent: Expr
    kind: str
    body: Stmt
    thread: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Stmt | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Let(Stmt):
    """`var` = `value` in `body` (an index computed once)."""

    var: Var
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class Allocate(Stmt):
    """`buffer` exists (uninitialised) for the duration of `body`."""

    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, slots=True, eq=False)
class Barrier(Stmt):
    """All threads of a block wait here; shared-memory writes before it are visible after it."""


@dataclass(frozen=True, slots=True, eq=False)
class ThreadAllReduce(Stmt):
    """A collective of the threads of a block, reached by all of them (never under a thread
    loop): each group of threads that agree on the thread indices not in `tags` combines its
    ``sources[k][0]`` (one per thread, "local" buffers) with ``combiners[k]``, and every thread
    of the group gets the result in ``results[k][0]``. A reduce axis bound to ``threadIdx.*``
    lowers to this (see `schedlang.loopir.thread_reduce`)."""

    combiners: tuple[CommReducer, ...]
    sources: tuple[Buffer, ...]
    results: tuple[Buffer, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]


def seq(*stmts: Stmt | None) -> Stmt:
    """A statement running `stmts` in order (flattened; None entries dropped)."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, Seq) else (s,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


@dataclass(frozen=True, slots=True, eq=False)
class LoweredFunc:
    """A lowered schedule: `params` are the argument buffers in call order, `sizes` the
    symbolic sizes read off them, `body` the loop nest, `index_dtype` the type its loop
    variables and index arithmetic are declared in (`index_type`), whose range a call's sizes
    must fit."""

    name: str
    params: tuple[Buffer, ...]
    sizes: tuple[Var, ...]
    body: Stmt
    index_dtype: str = "int32"

    def __str__(self) -> str:
        from .printer import func_str

        return func_str(self)

    def _repr_html_(self) -> str:
        from .html import func_html

        return func_html(self)
