"""Which stages may compute or read tensor-core fragments element by element.

A fragment is held by a warp's or a warpgroup's lanes together (`loopir.memory.fragments`), so
a thread can read or write only the elements it holds. Tensor instructions (`tensorize`) move
whole tiles. Besides them, a stage stored in a warpgroup's accumulator (``wgmma.accumulator``)
may be computed element by element, each thread computing its own elements
(`loopir.gpu.fragment_lanes`), when every element it reads from a fragment is one the same
thread holds:

- a *tile* stage (its box 64k x 8m along its last two dimensions) reads tiles at its own
  element and columns of rows (`fragments.holds_rows`) at its own row;
- a *column of rows* (any other box, its last dimension 64k rows) computes each row from
  columns of rows at that row, or combines one row of a tile over the tile's columns (one
  reduce axis: a row's maximum or sum).

Its loops are the fragment's layout, so no loop primitive may change them. Anything else is a
`TensorizeError` that names the stage and the read.
"""

from __future__ import annotations

from ..ir.expr import Binary, Expr, Read, Var
from ..ir.tensor import ComputeOp, Operation
from ..ir.visit import walk
from ..schedule.errors import TensorizeError
from ..schedule.intrin import FRAGMENT_SCOPES
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .placement import Placement
from .scans import find_scans

ELEMENT_SCOPE = "wgmma.accumulator"


class _Holders:
    """Where each tensor's elements are held: a scan's inits, updates and states in the
    scan's buffers (their scope and box are the scan's), any other stage in its own."""

    def __init__(self, schedule: Schedule, placement: Placement) -> None:
        self.schedule, self.placement = schedule, placement
        self.scans: dict[Operation, tuple[Stage, Operation]] = {}
        for scan in find_scans(schedule):
            for op, state in scan.writes.items():
                self.scans[op] = (scan.stage, state)

    def scope(self, op: Operation) -> str | None:
        """The scope of `op`'s elements, None where nothing computes them here."""
        if op in self.scans:
            return self.placement.scope(self.scans[op][0])
        stage = self.schedule[op]
        return self.placement.scope(stage) if stage.name in self.placement.placed else None

    def box(self, op: Operation, stage: Stage) -> list[int]:
        held = self.scans[op][1] if op in self.scans else op
        storage = self.placement.storage.get(held)
        if storage is None or any(n is None for n in storage.constant):
            raise _fail(
                stage,
                f"its box has no constant size; compute it at a loop "
                f"(s[{stage.name}].compute_at) where its tiles are whole",
            )
        return [int(n) for n in storage.constant]


def check_fragment_stages(schedule: Schedule, placement: Placement) -> None:
    """Raise `TensorizeError` for a fragment computed or read element by element where the
    threads cannot (module doc)."""
    holders = _Holders(schedule, placement)
    for stage in schedule.stages:
        if stage.name not in placement.placed:
            continue
        tensorized = stage.tensorized is not None
        if holders.scope(stage.op) in FRAGMENT_SCOPES and not tensorized:
            _check_element_stage(schedule, holders, stage)
            continue
        if not isinstance(stage.op, ComputeOp) or tensorized:
            continue
        for tensor in stage.op.input_tensors:
            producer = schedule[tensor.op]
            if holders.scope(tensor.op) in FRAGMENT_SCOPES:
                raise TensorizeError(
                    f"In schedule for '{stage.name}': it reads the fragment '{producer.name}' "
                    "element by element, but a fragment is read only by its own threads: "
                    "tensorize it with sl.intrin.mma_sync or store_matrix, or store it in "
                    f"the fragment's scope too (s[...].set_scope('{ELEMENT_SCOPE}'))"
                )


def _fail(stage: Stage, what: str) -> TensorizeError:
    return TensorizeError(f"In schedule for '{stage.name}': {what}")


def _check_element_stage(schedule: Schedule, holders: _Holders, stage: Stage) -> None:
    scope = holders.scope(stage.op)
    if scope != ELEMENT_SCOPE:
        raise _fail(
            stage,
            f"its scope '{scope}' is a tensor-core fragment, held by a warp's lanes together: "
            "tensorize it (s[...].tensorize(axis, sl.intrin...)); only a warpgroup's "
            f"'{ELEMENT_SCOPE}' is also computed element by element",
        )
    op = stage.op
    if not isinstance(op, ComputeOp) or op.num_outputs != 1:
        raise _fail(stage, f"only a compute of one output is computed in a '{scope}' fragment")
    if stage.relations or stage.binds or stage.leaves != list(stage.root_axes):
        raise _fail(
            stage,
            f"its loops are the layout of the '{scope}' fragment, each thread computing the "
            "elements it holds: leave them as they are (no split, fuse, reorder or bind)",
        )
    box = holders.box(stage.op, stage)
    rows_kind = len(box) < 2 or box[-2] % 64 != 0
    if rows_kind and box[-1] % 64:
        raise _fail(
            stage,
            f"its box is {box}: a '{scope}' stage holds tiles of 64 x 8k (its last two "
            "dimensions) or a column of 64k rows (its last dimension); compute it at the "
            "loop of its warpgroup's rows",
        )
    if not rows_kind and box[-1] % 8:
        raise _fail(stage, f"its box is {box}: the tiles' columns are not a multiple of 8")
    reduce_axes = op.reduce_axis
    if len(reduce_axes) > 1 or (reduce_axes and not rows_kind):
        raise _fail(
            stage,
            "element by element, a fragment combines one row over the columns of a tile "
            "(one reduce axis into a column of rows); tensorize other reductions",
        )
    axes = [iv.var for iv in op.axis]
    row = axes[-1] if rows_kind else axes[-2]
    own = (row, reduce_axes[0].var) if reduce_axes else (None if rows_kind else (row, axes[-1]))
    tile_vars = {row, *(own or ())}
    for read in _reads(op.expr):
        producer = schedule[read.tensor.op]
        held = holders.scope(read.tensor.op)
        if held not in FRAGMENT_SCOPES:
            continue
        if held != ELEMENT_SCOPE:
            raise _fail(stage, f"it reads '{producer.name}', a warp's mma.sync fragment")
        box_of = holders.box(read.tensor.op, stage)
        if len(box_of) < 2 or box_of[-2] % 64:
            owned = _moves_with(read.indices[-1], row, tile_vars)
            where = "its own row"
        else:
            owned = own is not None and all(
                _moves_with(i, v, tile_vars) for i, v in zip(read.indices[-2:], own)
            )
            where = "its own element" if not reduce_axes else "its row, over the reduce axis"
        if not owned:
            raise _fail(
                stage,
                f"it reads {read} from the fragment '{producer.name}', an element another "
                f"thread holds; a fragment is read element by element only at {where}",
            )


def _moves_with(index: Expr, var: Var, tile_vars: set) -> bool:
    """Whether `index` is `var` plus terms free of the tile's variables (an offset that is
    the same for the whole tile, such as the block of keys of a step)."""
    terms: list[tuple[int, Expr]] = []
    _terms(index, 1, terms)
    mine = [(sign, t) for sign, t in terms if t is var]
    rest = [t for _, t in terms if t is not var]
    if len(mine) != 1 or mine[0][0] != 1:
        return False
    return not any(n in tile_vars for t in rest for n in walk(t) if isinstance(n, Var))


def _terms(e: Expr, sign: int, out: list) -> None:
    if isinstance(e, Binary) and e.op in ("+", "-"):
        _terms(e.a, sign, out)
        _terms(e.b, sign if e.op == "+" else -sign, out)
    else:
        out.append((sign, e))


def _reads(body) -> list[Read]:
    exprs = body if isinstance(body, (tuple, list)) else (body,)
    return [n for e in exprs if isinstance(e, Expr) for n in walk(e) if isinstance(n, Read)]
