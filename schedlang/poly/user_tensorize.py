"""``tensorize`` with an intrinsic the user declared (`schedule.user_intrin`): proving that the
tile loops compute what its compute does, and where each of its buffers lies in the tensors.

The tile loops (from the tensorized axis inwards) stand for the intrinsic's axes, its data
axes then its reduce axes, each stepping one of the stage's root variables by one (as for the
shipped intrinsics). The stage's expression must be the intrinsic's, node for node, with the
same reducer; each pair of reads then lies alike: on every point of every tile, where the
intrinsic's read lies in its buffer is where the stage's read lies in its tensor, counted
from the tile's first element (isl, `_Tile`), dimension by dimension, the buffer's dimensions
along the tensor's in the same order, and the tensor's other dimensions fixed within a tile.
So an intrinsic may read its tile through ``//`` and ``%``, or a window wider than its loops
(a pooling's ``A[c, h + kh, w + kw]``), as TE allows. The function gets the address of the
stage's read at the tile's first instance: the intrinsic's read lies at 0 there. The
store moves likewise through the stage's own tensor. A tile the edge of the domain
cuts is refused: the function computes whole tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import islpy as isl

from ..ir.expr import Binary, Call, Cast, Compare, Const, Expr, Read, Reduce, Select, Unary, Var
from ..ir.integers import as_int
from ..ir.tensor import Operation
from ..ir.visit import children
from ..schedule.axis import Axis
from .affine import NonAffine, aff_text

if TYPE_CHECKING:
    from .tensorize import TensorPlan, _Checker


@dataclass(frozen=True)
class UserCall:
    """What `loopir.from_isl` needs to emit the calls of a tensorized stage: the intrinsic,
    and for each of its buffers, the stage's tensor and the tensor dimension of each buffer
    dimension (`dims`), the reads in the order the intrinsic's buffers list them."""

    intrin: object
    # per pair of reads, in the order of the expression: (the intrinsic's tensor, the tensor
    # dimension each of its buffer's dimensions lies along, -1 where it does not move)
    reads: tuple[tuple[Operation, tuple[int, ...]], ...]
    dst_dims: tuple[int, ...]
    fail: Callable[[str], Exception]  # a TensorizeError naming the tensorize, for the calls


def plan_user(checker: _Checker, inner: tuple[Axis, ...], roots: list[Axis]) -> TensorPlan:
    from .tensorize import TensorPlan, TileOf  # noqa: F811 - that module imports this one

    intrin, stage = checker.intrin, checker.stage
    op, declared = stage.op, intrin.op
    n_data = len(declared.axis)
    if [r.kind for r in roots] != ["data"] * n_data + ["reduce"] * len(declared.reduce_axis):
        raise checker.fail(
            f"the tile loops must be {n_data} data loop(s) then {len(declared.reduce_axis)} "
            f"reduce loop(s), as the axes of '{declared.name}'; they are "
            f"{', '.join(f'{a.name} ({r.kind})' for a, r in zip(inner, roots))}"
        )
    role = "update" if isinstance(op.expr, Reduce) else "compute"
    p = next(q for q in checker.placement.placed[stage.name] if q.stmt.role == role)
    mine, theirs = p.stmt.value, declared.expr
    if isinstance(op.expr, Reduce) != isinstance(theirs, Reduce):
        raise checker.fail(
            f"'{stage.name}' is {'a reduction' if role == 'update' else 'elementwise'} and "
            f"'{declared.name}' is not"
        )
    if isinstance(theirs, Reduce):
        if op.expr.where is not None or theirs.where is not None:
            raise checker.fail("a reduction with where= cannot run as a declared intrinsic")
        same = _same(
            op.expr.combiner.result, theirs.combiner.result, _combiner_vars(op.expr, theirs), []
        )
        identities = (op.expr.combiner.identity, theirs.combiner.identity)
        constant = all(isinstance(e, Const) for e in identities)
        if not same or not constant or identities[0].value != identities[1].value:
            raise checker.fail(
                f"'{stage.name}' reduces with {op.expr.combiner.name}, the intrinsic with "
                f"{theirs.combiner.name}"
            )
        theirs = theirs.source
    pairs: list[tuple[Read, Read]] = []
    if not _same(mine, theirs, {}, pairs):
        raise checker.fail(
            f"'{stage.name}' computes {mine}, but '{declared.name}' computes {theirs}: "
            "the expressions must be the same, node for node"
        )
    axes = [iv.var for iv in declared.axis + declared.reduce_axis]
    tile = _Tile(checker, p, roots, axes, intrin.shape)
    reads = [(theirs.tensor.op, tile.dims(read, theirs)) for read, theirs in pairs]
    data = list(stage.root_axes[: len(op.axis)])
    dst_dims = tuple(data.index(r) for r in roots[:n_data])
    if list(dst_dims) != sorted(dst_dims):
        raise checker.fail(
            f"the tile loops run along the dimensions {dst_dims} of '{stage.name}'; they must "
            "be in the order of its dimensions, as the intrinsic's buffer has them"
        )
    outside = [a for a in stage.leaves[: stage.leaves.index(inner[0])] if a.kind == "reduce"]
    if role == "compute":
        ops = {"compute": "body"}
    elif not outside:
        ops = {"init": None, "update": "body"}  # the body computes the whole reduction
    else:
        if not intrin.update:
            raise checker.fail(
                f"reduce loops lie outside the tile ({', '.join(a.name for a in outside)}), so "
                "the intrinsic needs an update (and a reset): return (body, reset, update)"
            )
        ops = {"init": "reset" if intrin.reset else None, "update": "update"}
    srcs = tuple(
        TileOf(read.tensor.op, dims, tuple(as_int(n) for n, d in zip(theirs.shape, dims) if d >= 0))
        for (_, dims), (read, theirs) in zip(reads, ((r, t.tensor) for r, t in pairs))
    )
    call = UserCall(intrin, tuple(reads), dst_dims, checker.fail)
    dst = TileOf(op, dst_dims, intrin.shape[:n_data])
    return TensorPlan(stage.name, inner, ops, dst, srcs, call=call)


class _Tile:
    """The reads of one tile, each an isl function of the tile's origin (a stage instance
    whose tile loops are all 0, in the root space) and of the intrinsic's axes `u`: how far
    the stage's read lies from where it lies at the origin, and where the intrinsic's read
    lies in its buffer. A buffer dimension lies along the tensor dimension where the two
    agree on every point of every tile (TE's tiles read through ``//`` and ``%``, or a window
    wider than the tile loops, included)."""

    def __init__(self, checker: _Checker, p, roots: list[Axis], axes: list[Var], shape) -> None:
        self.checker, self.p, self.axes = checker, p, axes
        space = p.stmt.root_space
        names = checker.stage.root_axes
        n = p.to_root.dim(isl.dim_type.out)
        loops = p.loops.dim(isl.dim_type.out)
        vs = [f"v{k}" for k in range(loops)]
        zero = " and ".join(f"{v} = 0" for v in vs[loops - len(roots) :])
        at = isl.Set(f"{{ [{', '.join(vs)}] : {zero} }}").align_params(p.loops.get_space())
        origins = p.loops.intersect_range(at).domain().apply(p.to_root)
        xs = [f"x{k}" for k in range(n)]
        us = [f"u{a}" for a in range(len(axes))]
        moved = list(xs)
        for a, root in enumerate(roots):
            k = names.index(root)
            moved[k] = f"{moved[k]} + {us[a]}"
        bounds = " and ".join(f"0 <= {u} < {e}" for u, e in zip(us, shape))
        pair = f"[{', '.join(xs + us)}]"
        params = checker.params.prefix
        self.tile = isl.Set(f"{params} {{ {pair} : {bounds} }}")
        self.tile = self.tile.intersect(
            origins.flat_product(isl.Set(f"{{ [{', '.join(us)}] }}")).align_params(
                self.tile.get_space()
            )
        )
        self.at_u = isl.Map(f"{params} {{ {pair} -> {space}[{', '.join(moved)}] }}")
        self.at_0 = isl.Map(f"{params} {{ {pair} -> {space}[{', '.join(xs)}] }}")
        self.pair = pair
        self.names = {v: u for v, u in zip(axes, us)}
        self.context = checker.params.context

    def _function(self, m: isl.Map) -> isl.PwMultiAff:
        m = m.align_params(self.tile.get_space()).intersect_domain(self.tile)
        return isl.PwMultiAff.from_map(m.intersect_params(self.context))

    def _zero(self, a: isl.PwAff) -> bool:
        return a.non_zero_set().intersect_params(self.context).is_empty()

    def dims(self, read: Read, theirs: Read) -> tuple[int, ...]:
        """The dimension of `read`'s tensor that each dimension of `theirs`'s buffer lies
        along (-1 for a dimension the intrinsic reads at 0 throughout)."""
        access = next(a for a in self.p.stmt.reads if a.read is read).relation
        access = access.align_params(self.tile.get_space())
        mine = self._function(self.at_u.apply_range(access)).sub(
            self._function(self.at_0.apply_range(access))
        )
        try:
            text = [aff_text(i, self.names) for i in theirs.indices]
        except NonAffine:
            raise self.checker.fail(
                f"the intrinsic reads '{theirs}', whose indices are not affine in its axes"
            ) from None
        theirs_at = self._function(isl.Map(f"{{ {self.pair} -> [{', '.join(text)}] }}"))
        moving = mine.dim(isl.dim_type.out)
        dims: list[int] = []
        for d in range(theirs_at.dim(isl.dim_type.out)):
            want = theirs_at.get_pw_aff(d)
            if self._zero(want):
                dims.append(-1)
                continue
            found = [
                t
                for t in range(moving)
                if t not in dims and self._zero(mine.get_pw_aff(t).sub(want))
            ]
            if not found:
                raise self.checker.fail(
                    f"'{read}' does not move through its tensor as '{theirs}' moves through "
                    f"dimension {d} of its buffer, at some point of a tile"
                )
            dims.append(found[0])
        for t in range(moving):
            if t not in dims and not self._zero(mine.get_pw_aff(t)):
                raise self.checker.fail(
                    f"'{read}' moves along dimension {t} of its tensor within a tile, along "
                    f"which '{theirs}' does not move through its buffer"
                )
        placed = [d for d in dims if d >= 0]
        if placed != sorted(placed):
            raise self.checker.fail(
                f"'{read}' runs along its tensor's dimensions {tuple(placed)} where '{theirs}' "
                "runs along its buffer's in order; reorder the tensor or the intrinsic's indices"
            )
        return tuple(dims)


def _combiner_vars(mine: Expr, theirs: Expr) -> dict:
    if isinstance(mine, Reduce) and isinstance(theirs, Reduce):
        return {
            mine.combiner.lhs: theirs.combiner.lhs,
            mine.combiner.rhs: theirs.combiner.rhs,
        }
    return {}


def _same(a: Expr, b: Expr, names: dict, pairs: list) -> bool:
    """Whether `a` and `b` are the same expression, reads paired into `pairs`."""
    if type(a) is not type(b) or a.dtype != b.dtype:
        return False
    if isinstance(a, Read):
        pairs.append((a, b))
        return True
    if isinstance(a, Const):
        return a.value == b.value
    if isinstance(a, Var):
        return names.get(a) is b
    if isinstance(a, (Binary, Unary, Compare)) and a.op != b.op:
        return False
    if isinstance(a, Call) and a.name != b.name:
        return False
    if not isinstance(a, (Binary, Unary, Compare, Call, Cast, Select)):
        return False
    kids_a, kids_b = children(a), children(b)
    return len(kids_a) == len(kids_b) and all(
        _same(x, y, names, pairs) for x, y in zip(kids_a, kids_b)
    )
