"""The scans of a schedule (`ir.scan`) as the polyhedral layer sees them.

A scan's rows are written in place: its init's and update's statements store into the scan's
tensor, and reads of its state read that tensor, so isl sees one tensor (`aliases`) and the
dataflow from one step to the next. The update and the stages between the state and the update
(the *body*) run the steps after the init's rows: their statements exist for those steps only
(`first_step`). In the algorithm's own order (`step_order`) the body runs one step after
another, all of its stages in step t before any in step t + 1; the legality check holds the
schedule to that order, and a read of a step that no earlier step computes is an error
(`check_steps`). The init's rows are stored into the first rows of the scan's buffer at any
size, so a state with fewer steps than the init gives rows is refused: now where that holds at
every size, at the call where it holds at some (`rows_to_check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..errors import AlgorithmError
from ..ir.expr import Expr
from ..ir.printer import expr_str
from ..ir.scan import ScanOp, body_ops, rows_past_steps
from ..ir.tensor import Operation
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from ..schedule.stage_guards import current_op as current
from .affine import aff_text
from .space import Params


@dataclass
class Scan:
    stage: Stage  # the scan's own stage (no loops)
    ops: tuple[ScanOp, ...]  # one per state
    writes: dict[Operation, ScanOp]  # current init and update ops, and states -> their scan op
    body: list[Stage]  # the stages run step by step, in stage order
    rows: Expr  # the steps the init gives


def find_scans(schedule: Schedule) -> list[Scan]:
    found = []
    for stage in schedule.stages:
        if not isinstance(stage.op, ScanOp):
            continue
        ops = stage.ops
        writes: dict[Operation, ScanOp] = {}
        for op in ops:
            for part in (op.init, op.update):
                writes[current(schedule, part)] = op
            writes[op.state.op] = op
        updates = tuple(current(schedule, op.update) for op in ops)
        sources = {op.state.op for op in ops} | {
            current(schedule, t) for op in ops for t in op.inputs
        }
        body_set = set(body_ops(list(updates), sources))
        body = [s for s in schedule.stages if any(o in body_set for o in s.ops)]
        for member in body:
            _check_step_axis(stage, member)
        found.append(Scan(stage, ops, writes, body, ops[0].init.shape[0]))
    return found


def _check_step_axis(scan: Stage, member: Stage) -> None:
    steps = scan.op.shape[0]
    axis = getattr(member.op, "axis", ())
    if not axis or expr_str(axis[0].dom.extent) != expr_str(steps):
        raise AlgorithmError(
            f"'{member.name}' is computed at every step of the scan '{scan.name}' (it reads a "
            f"state), so its first axis must be the steps, of extent {expr_str(steps)}"
        )


def aliases(scans: list[Scan]) -> dict[Operation, Operation]:
    """init, update and state ops -> the scan op whose tensor they are."""
    return {op: scan_op for scan in scans for op, scan_op in scan.writes.items()}


def first_step(scans: list[Scan]) -> dict[str, Expr]:
    """Body stages -> the first step they compute (the init's rows come before)."""
    return {member.name: scan.rows for scan in scans for member in scan.body}


def step_order(scans: list[Scan], order: dict[str, int]) -> dict[str, int]:
    """Body stages -> where their steps run in the algorithm's order: at the scan's place."""
    return {member.name: order[scan.stage.name] for scan in scans for member in scan.body}


def check_steps(no_source: isl.UnionMap, scans: list[Scan], tensor_name) -> None:
    """A body read of a scan's tensor that no earlier step (or the init) writes."""
    reads: list[isl.Map] = []
    no_source.foreach_map(reads.append)
    for scan in scans:
        for op in scan.ops:
            name = tensor_name(op)
            for m in reads:
                if m.get_tuple_name(isl.dim_type.out) != name or m.is_empty():
                    continue
                point = m.wrap().sample_point()
                coords = [
                    point.get_coordinate_val(isl.dim_type.set, k).to_python()
                    for k in range(point.get_space().dim(isl.dim_type.set))
                ]
                element = ", ".join(str(c) for c in coords[m.dim(isl.dim_type.in_) :])
                raise AlgorithmError(
                    f"scan '{scan.stage.name}': a step reads {op.state.name}[{element}], which "
                    "no earlier step computes; an update reads the state at earlier steps "
                    "only (state[t - 1, ...]), and the init's rows"
                )


def check_steps_alone(placement, scan: Scan, params: Params) -> None:
    """`check_steps` for a scan computed at a loop, over its own statements in the
    algorithm's order: its inits, then its body step after step."""
    stages = [scan.stage.schedule[op.init.op] for op in scan.ops] + scan.body
    order = {stage.name: k for k, stage in enumerate(stages)}
    statements = [st for stage in stages for st in placement.by_stage.get(stage.name, [])]
    width = max(len(st.root_vars) for st in statements)
    reads = writes = seq = isl.UnionMap("{ }")
    for st in statements:
        n = len(st.root_vars)
        xs = [f"x{k}" for k in range(n)]
        init = st.stage.name not in {b.name for b in scan.body}
        at = ["0", "0"] if init else ["1", xs[0]]
        role = "1" if st.role == "update" else "0"
        outs = at + [str(order[st.stage.name]), role] + xs + ["0"] * (width - n)
        text = f"{{ {st.root_space}[{', '.join(xs)}] -> [{', '.join(outs)}] }}"
        seq = seq.union(isl.UnionMap.from_map(isl.Map(text).intersect_domain(st.domain)))
        writes = writes.union(isl.UnionMap.from_map(st.write))
        for acc in st.reads:
            reads = reads.union(isl.UnionMap.from_map(acc.relation))
    info = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
    flow = info.set_schedule_map(seq).compute_flow()
    check_steps(flow.get_may_no_source(), [scan], params.tensor)


def rows_to_check(scans: list[Scan], params: Params) -> list[Scan]:
    """The scans whose init gives more rows than the state has steps at some sizes but not at
    others: a call checks its sizes (`loopir.core.scan_rows`). Where it does at every size, the
    init's rows could never fit, and that is an error now."""
    found = []
    for scan in scans:
        first = scan.ops[0]
        rows, steps = aff_text(scan.rows, params.names), aff_text(first.shape[0], params.names)
        past = isl.Set(f"{params.prefix} {{ : {rows} > {steps} }}").intersect_params(params.context)
        if past.is_empty():
            continue
        if params.context.is_subset(past):
            raise AlgorithmError(
                rows_past_steps(
                    first.scan_name,
                    first.init.name,
                    first.state.name,
                    expr_str(scan.rows),
                    expr_str(first.shape[0]),
                )
            )
        found.append(scan)
    return found
