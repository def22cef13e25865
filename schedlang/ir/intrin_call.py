"""A tensor intrinsic called inside a compute (TE's TensorComputeOp):
``compute((n, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]))``.

The compute's function takes its leading (outer) axes only; the intrinsic's call gives each of
its inputs as a region of a tensor (`tensor_region`), and the compute's remaining dimensions
are the intrinsic's output. The compute is what the intrinsic computes, tile by tile: its body
is the intrinsic's own compute with each input read through its region and the intrinsic's
axes as the compute's inner axes (its reduce axes after the call's `reduce_axis`, whose steps
accumulate the tiles). So the reference evaluates the intrinsic's definition, and a schedule
sees an ordinary stage whose inner loops are tensorized with the intrinsic (`schedule.stage`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import AlgorithmError
from .expr import Expr, Read, Reduce, Var
from .tensor_region import TensorRegion
from .visit import substitute, transform


@dataclass(frozen=True, eq=False)
class IntrinCall:
    """`intrin` (the schedule's intrinsic, whose compute is `op`) applied to `regions`, its
    partial results accumulated over `reduce_axis` (IterVars of the calling compute)."""

    intrin: object
    op: object  # the intrinsic's ComputeOp
    regions: tuple[TensorRegion, ...]
    reduce_axis: tuple = ()

    def check(self, name: str) -> None:
        """Refuse regions that are not the intrinsic's inputs."""
        ins = self.op.input_tensors
        if len(self.regions) != len(ins) or not all(
            isinstance(r, TensorRegion) for r in self.regions
        ):
            raise AlgorithmError(
                f"compute '{name}': the intrinsic '{self.op.name}' takes {len(ins)} region(s) "
                f"of tensors (A[i, 0:16]), one per input of its compute, not {self.regions!r}"
            )
        for region, t in zip(self.regions, ins):
            want = tuple(_extent(n) for n in t.shape)
            if region.extents != want or region.tensor.dtype != t.dtype:
                raise AlgorithmError(
                    f"compute '{name}': {region!r} ({region.tensor.dtype}) gives the input "
                    f"'{t.name}' of '{self.op.name}', which is {t.dtype} of shape {want}"
                )
        if self.reduce_axis and not isinstance(self.op.expr, Reduce):
            raise AlgorithmError(
                f"compute '{name}': reduce_axis accumulates the tiles of a reduction, but "
                f"'{self.op.name}' is elementwise"
            )

    def body(self, inner: tuple, reduce_inner: tuple) -> Expr:
        """The compute's body: the intrinsic's, its inputs read through the regions, its axes
        `inner` and its reduce axes `reduce_inner` (IterVars of the calling compute)."""
        ins = {t.op: r for t, r in zip(self.op.input_tensors, self.regions)}
        own = self.op.axis + self.op.reduce_axis
        renamed = {iv.var: new.var for iv, new in zip(own, (*inner, *reduce_inner))}

        def through_region(node: Expr) -> Expr | None:
            if isinstance(node, Read) and node.tensor.op in ins:
                region = ins[node.tensor.op]
                return Read(region.tensor, region.element(node.indices), node.dtype)
            return None

        body = self.op.expr
        if isinstance(body, Reduce):
            source = transform(substitute(body.source, renamed), through_region)
            where = body.where
            if where is not None:
                where = transform(substitute(where, renamed), through_region)
            axes = tuple(self.reduce_axis) + tuple(reduce_inner)
            return Reduce(body.combiner, source, axes, where, body.dtype)
        return transform(substitute(body, renamed), through_region)


def _extent(n: object) -> int | None:
    return getattr(n, "value", n) if not isinstance(n, Var) else None
