"""``tensorize`` with an intrinsic the user declared (`schedule.user_intrin`): proving that the
tile loops compute what its compute does, and where each of its buffers lies in the tensors.

The tile loops (from the tensorized axis inwards) stand for the intrinsic's axes, its data
axes then its reduce axes, each stepping one of the stage's root variables by one (as for the
shipped intrinsics). The stage's expression must be the intrinsic's, node for node, with the
same reducer; each pair of reads then moves alike: where the intrinsic's read indexes its
buffer's dimension d by axis a, the stage's read moves along one dimension of its tensor by
exactly one at each step of a's loop (isl's deltas, `_Checker._steps`), and not at all along
the loops its intrinsic read does not use; the buffer's dimensions lie in the same order in the
tensor. The store moves likewise through the stage's own tensor. A tile the edge of the domain
cuts is refused: the function computes whole tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ir.expr import Binary, Call, Cast, Compare, Const, Expr, Read, Reduce, Select, Unary, Var
from ..ir.tensor import Operation
from ..ir.visit import children
from ..schedule.axis import Axis

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
    role = "update" if isinstance(op.body, Reduce) else "compute"
    p = next(q for q in checker.placement.placed[stage.name] if q.stmt.role == role)
    mine, theirs = p.stmt.value, declared.body
    if isinstance(op.body, Reduce) != isinstance(theirs, Reduce):
        raise checker.fail(
            f"'{stage.name}' is {'a reduction' if role == 'update' else 'elementwise'} and "
            f"'{declared.name}' is not"
        )
    if isinstance(theirs, Reduce):
        if op.body.where is not None or theirs.where is not None:
            raise checker.fail("a reduction with where= cannot run as a declared intrinsic")
        same = _same(
            op.body.combiner.result, theirs.combiner.result, _combiner_vars(op.body, theirs), []
        )
        if not same or op.body.combiner.identity.value != theirs.combiner.identity.value:
            raise checker.fail(
                f"'{stage.name}' reduces with {op.body.combiner.name}, the intrinsic with "
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
    reads = []
    for read, their_read in pairs:
        steps = checker._steps(p, read, roots)
        reads.append((their_read.tensor.op, _dims(checker, read, their_read, steps, axes)))
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
    shapes = dict(zip(axes, intrin.shape))
    srcs = tuple(
        TileOf(read.tensor.op, dims, tuple(shapes[a] for a in _read_axes(theirs, axes)))
        for (_, dims), (read, theirs) in zip(reads, pairs)
    )
    call = UserCall(intrin, tuple(reads), dst_dims, checker.fail)
    dst = TileOf(op, dst_dims, intrin.shape[:n_data])
    return TensorPlan(stage.name, inner, ops, dst, srcs, call=call)


def _dims(checker, read: Read, theirs: Read, steps, axes: list[Var]) -> tuple[int, ...]:
    """The dimension of `read`'s tensor that each dimension of `theirs`'s buffer lies along."""
    dims = []
    used = set()
    for d, index in enumerate(theirs.indices):
        if isinstance(index, Const) and index.value == 0:
            dims.append(None)
            continue
        if not (isinstance(index, Var) and index in axes):
            raise checker.fail(
                f"the intrinsic reads '{theirs}': each index of its reads is one of its axes (or 0)"
            )
        a = axes.index(index)
        used.add(a)
        moved = steps[a]
        if moved is None:
            raise checker.fail(
                f"'{read}' does not move along the tile loop of the intrinsic's axis "
                f"'{index.name}', as '{theirs}' does along dimension {d}"
            )
        dims.append(moved)
    for a, moved in enumerate(steps):
        if a not in used and moved is not None:
            raise checker.fail(
                f"'{read}' moves with the tile loop of the intrinsic's axis '{axes[a].name}', "
                f"which '{theirs}' does not use"
            )
    placed = [d for d in dims if d is not None]
    if placed != sorted(placed) or len(set(placed)) != len(placed):
        raise checker.fail(
            f"'{read}' runs along its tensor's dimensions {tuple(placed)} where '{theirs}' runs "
            "along its buffer's in order; reorder the tensor or the intrinsic's indices"
        )
    return tuple(-1 if d is None else d for d in dims)


def _read_axes(theirs: Read, axes: list[Var]) -> list[Var]:
    return [i for i in theirs.indices if isinstance(i, Var) and i in axes]


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
