"""Schedule records: one frozen dataclass per primitive application.

A schedule *is* its list of records; lowering interprets them. That gives printing as Python,
replay, copying and hashing for free. Each record keeps the user's source line for messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Expr
from .axis import Axis
from .intrin import TensorIntrin


@dataclass(frozen=True, slots=True)
class Split:
    stage: str
    parent: Axis
    outer: Axis
    inner: Axis
    factor: int | None
    nparts: int | None
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Fuse:
    """``fuse(*axes)``: the adjacent loops `axes`, outer first, become the loop `fused`."""

    stage: str
    axes: tuple[Axis, ...]
    fused: Axis
    loc: str = ""

    @property
    def outer(self) -> Axis:
        """TE's name: the outermost loop fused (TE fuses two at a time)."""
        return self.axes[0]

    @property
    def inner(self) -> Axis:
        """TE's name: the innermost loop fused."""
        return self.axes[-1]


@dataclass(frozen=True, slots=True)
class Reorder:
    stage: str
    order: tuple[Axis, ...]
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Annotate:
    """``unroll``, ``vectorize`` or ``parallel``."""

    stage: str
    axis: Axis
    kind: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class AutoUnroll:
    """``pragma(axis, "auto_unroll_max_step", max_step)``: the loops inside `axis` whose
    constant extents multiply to at most `max_step` (innermost first) are unrolled."""

    stage: str
    axis: Axis
    max_step: int
    loc: str = ""


@dataclass(frozen=True, slots=True)
class ImportLlvm:
    """``pragma(axis, "import_llvm", code)``: LLVM IR linked into the CPU kernel, defining the
    C functions of the stage's declared intrinsic (`user_intrin`)."""

    stage: str
    axis: Axis
    code: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Pragma:
    """``pragma(axis, name, value)`` with a name schedlang acts on in no way: kept on the loop,
    as TE keeps a pragma it has no pass for (an annotation for the user's own tools)."""

    stage: str
    axis: Axis
    name: str
    value: object = None
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Bind:
    stage: str
    axis: Axis
    tag: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class ComputeAt:
    stage: str
    target: str
    axis: Axis
    loc: str = ""


@dataclass(frozen=True, slots=True)
class ComputeInline:
    stage: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class ComputeRoot:
    stage: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class CacheRead:
    """``s.cache_read(stage, scope, readers)``; `cache` names the stage it added."""

    stage: str
    scope: str
    readers: tuple[str, ...]
    cache: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class CacheWrite:
    """``s.cache_write(stage, scope)``; `cache` names the stage it added."""

    stage: str
    scope: str
    cache: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class RFactor:
    """``s.rfactor(stage, axis, factor_axis)``; `factored` names the stage it added."""

    stage: str
    axis: Axis
    factor_axis: int
    factored: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Online:
    """``s.online([stages], factor)``: the chain of reductions fused into one blocked pass."""

    stages: tuple[str, ...]
    factor: int
    loc: str = ""
    keep: tuple[str, ...] = ()
    threshold: float | None = None

    @property
    def stage(self) -> str:
        return self.stages[0]


@dataclass(frozen=True, slots=True)
class SetScope:
    stage: str
    scope: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class DoubleBuffer:
    stage: str
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Pipeline:
    """``s[T].pipeline(stages, tma, warp_specialize)``: T filled by asynchronous copies,
    `stages` - 1 steps ahead (with `tma`, bulk copies of the copy engine issued by a producer
    warp of their own, or without `warp_specialize` by the block's first thread)."""

    stage: str
    stages: int
    loc: str = ""
    tma: bool = False
    warp_specialize: bool = True

    @property
    def call(self) -> str:
        """The call as the user wrote it, for messages."""
        tma = ", tma=True" if self.tma else ""
        alone = "" if self.warp_specialize else ", warp_specialize=False"
        return f"pipeline(stages={self.stages!r}{tma}{alone})"


@dataclass(frozen=True, slots=True)
class Swizzle:
    """``s[T].swizzle(bytes)``: T's buffer permutes its 16-byte chunks by line (`Buffer`)."""

    stage: str
    bytes: int
    loc: str = ""


@dataclass(frozen=True, slots=True)
class StorageAlign:
    """The stride of the buffer dimension of root axis `axis` is ``factor * k + offset``."""

    stage: str
    axis: Axis
    factor: int
    offset: int
    loc: str = ""


@dataclass(frozen=True, slots=True)
class Tensorize:
    """The loops of `stage` from `axis` inwards run as the tensor-core intrinsic `intrin`."""

    stage: str
    axis: Axis
    intrin: TensorIntrin
    loc: str = ""


@dataclass(frozen=True, slots=True)
class StorePredicate:
    """``s[T].set_store_predicate(cond)``: T's stores happen where `cond` holds."""

    stage: str
    predicate: Expr
    loc: str = ""


Record = (
    Split
    | Fuse
    | Reorder
    | Annotate
    | AutoUnroll
    | ImportLlvm
    | Bind
    | ComputeAt
    | ComputeInline
    | ComputeRoot
    | CacheRead
    | CacheWrite
    | RFactor
    | SetScope
    | DoubleBuffer
    | Pipeline
    | Swizzle
    | StorageAlign
    | Tensorize
    | StorePredicate
)
