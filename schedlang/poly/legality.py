"""Legality: every dataflow dependence must survive the schedule.

Dependences come from isl's dataflow analysis over the algorithm's own order (stages in
topological order, a reduction's init before its updates). In the new schedule each dependence
must go forward (its schedule delta is lexicographically positive; the updates of one reduction
may be reordered among themselves), and no dependence may be
carried by a loop whose iterations run at the same time (parallel, vectorized, bound to blocks,
threads or virtual threads), except a reduction over a loop bound to ``threadIdx.*``, which the
CUDA backend combines across threads. Statements computed at another stage's loop are correct by
construction of their footprint (their init runs before their updates by construction too); for
them only their own reduction is checked, within one instance of the loops they are computed in.
Every two updates of one element are checked for concurrency, not only those dataflow links.
"""

from __future__ import annotations

import functools

import islpy as isl

from ..errors import InternalError
from ..schedule import records as rec
from ..schedule.errors import LegalityError, message
from ..schedule.schedule import Schedule
from .isl_calls import Callbacks
from .loops import deferred_fuses
from .placement import Placed, Placement
from .scans import Scan, check_steps, current, find_scans, step_order
from .space import Params

_CONCURRENT = ("parallel", "vectorized")


def check_legality(
    schedule: Schedule, placement: Placement, params: Params, scans: list[Scan]
) -> set:
    """Raise `LegalityError` for an illegal schedule; return the cross-thread reduction axes."""
    placed = [p for p in placement.all() if p.prefix_len == 0]
    if not placed:
        return set()
    order = {stage.name: k for k, stage in enumerate(schedule.stages)}
    steps = step_order(scans, order)
    width = max(len(p.stmt.root_vars) for p in placed)
    reads = writes = original = None
    for p in placed:
        role = 1 if p.stmt.role == "update" else 0
        n = len(p.stmt.root_vars)
        xs = [f"x{k}" for k in range(n)]
        # The algorithm's order: stage after stage, except that a scan's body runs step
        # after step (`poly.scans`), at the scan's place.
        name = p.stmt.stage.name
        at = [str(steps[name]), xs[0]] if name in steps else [str(order[name]), "0"]
        outs = at + [str(order[name]), str(role)] + xs + ["0"] * (width - n)
        seq = isl.Map(f"{{ {p.stmt.name}[{', '.join(xs)}] -> [{', '.join(outs)}] }}")
        seq = isl.UnionMap.from_map(seq.intersect_domain(p.domain))
        original = seq if original is None else original.union(seq)
        for acc in p.stmt.reads:
            r = isl.UnionMap.from_map(p.to_root.apply_range(acc.relation))
            reads = r if reads is None else reads.union(r)
        for write in [p.stmt.write, *p.stmt.other_writes]:
            w = isl.UnionMap.from_map(p.to_root.apply_range(write))
            writes = w if writes is None else writes.union(w)
    if reads is None:
        return set()
    info = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
    flow = info.set_schedule_map(original).compute_flow()
    if scans:
        check_steps(flow.get_may_no_source(), scans, params.tensor)
    deps = flow.get_must_dependence().intersect_params(params.context)
    by_name = {p.stmt.name: p for p in placed}
    cross_thread: set = set()
    problems: list[str] = []

    def check(dep: isl.Map) -> None:
        src = by_name[dep.get_tuple_name(isl.dim_type.in_)]
        dst = by_name[dep.get_tuple_name(isl.dim_type.out)]
        _check_pair(schedule, dep, src, dst, cross_thread, problems)

    with Callbacks() as calls:  # a Ctrl-C in `check` stops the check (`isl_calls`)
        deps.foreach_map(calls.wrap(check))
    _check_reductions(schedule, placement, params, cross_thread, problems)
    if problems:
        raise LegalityError(problems[0])
    return cross_thread


def _check_reductions(schedule, placement: Placement, params: Params, cross_thread, problems):
    """Any two updates of one element conflict, not only the ones dataflow links: once the
    updates are reordered, two that were far apart may run at the same time."""
    for p in placement.all():
        if p.stmt.role != "update" or problems:
            continue
        if not any(_kind_of(schedule, entry) for entry in p.template):
            continue  # no loop runs its iterations at the same time
        write = isl.Map.from_pw_multi_aff(p.store_index).intersect_domain(p.domain)
        pairs = write.apply_range(write.reverse()).intersect_params(params.context)
        pairs = pairs.subtract(isl.Map.identity(pairs.get_space()))
        if p.prefix_len:  # a stage computed at a loop has a buffer per instance of the loop
            n = p.domain.dim(isl.dim_type.set)
            xs = [f"x{d}" for d in range(n)]
            ys = [f"y{d}" for d in range(n)]
            same = " and ".join(f"{xs[d]} = {ys[d]}" for d in range(p.prefix_len))
            name = p.stmt.name
            pairs = pairs.intersect(
                isl.Map(f"{{ {name}[{', '.join(xs)}] -> {name}[{', '.join(ys)}] : {same} }}")
            )
        if not pairs.is_empty():
            _check_pair(schedule, pairs, p, p, cross_thread, problems)


def _kind_of(schedule: Schedule, entry) -> tuple[str, object] | None:
    """('parallel'|'vectorized'|tag, record) if the schedule dimension runs concurrently."""
    if entry[0] != "dim":
        return None
    axis = entry[1]
    stage = schedule[axis.stage]
    fuses = any(isinstance(r, rec.Fuse) for r in stage.relations)  # most stages have none
    for group in deferred_fuses(stage, stage.extents) if fuses else ():  # a fuse's root loop
        if axis in group.components:
            bound = [a for a in group.leaves if a in stage.binds]
            if bound:
                return stage.binds[bound[0]], schedule.record_for(rec.Bind, bound[0])
            parallel = [a for a in group.leaves if stage.annotations.get(a) == "parallel"]
            if parallel:
                return "parallel", schedule.record_for(rec.Annotate, parallel[0])
            return None
    if axis in stage.binds:
        return stage.binds[axis], schedule.record_for(rec.Bind, axis)
    kind = stage.annotations.get(axis)
    if kind in _CONCURRENT:
        return kind, schedule.record_for(rec.Annotate, axis)
    return None


@functools.lru_cache(maxsize=4096)
def dim_relation(n: int, d: int, op: str) -> isl.Map:
    """``{ [s] -> [t] : t_d op s_d }`` on n schedule dimensions."""
    ss = ", ".join(f"s{k}" for k in range(n))
    ts = ", ".join(f"t{k}" for k in range(n))
    return isl.Map(f"{{ [{ss}] -> [{ts}] : t{d} {op} s{d} }}")


def _check_pair(schedule, dep: isl.Map, src: Placed, dst: Placed, cross_thread, problems) -> None:
    pairs = dep.apply_domain(src.sched).apply_range(dst.sched)
    n = pairs.dim(isl.dim_type.in_)
    # A reduction's updates of one element may run in any order (its combiner is associative
    # and commutative), so only their concurrency is checked, as in TE.
    reordering_ok = src.stmt is dst.stmt and src.stmt.role == "update"
    tied = pairs  # the pairs whose times agree on the dimensions before d
    for d in range(n):
        if tied.is_empty():
            return
        backwards = tied.intersect(dim_relation(n, d, "<"))
        if not reordering_ok and not backwards.is_empty():
            problems.append(_describe_backwards(schedule, dep, src, dst, backwards))
            return
        entry = src.template[d]
        concurrent = _kind_of(schedule, entry)
        if concurrent is not None:
            carried = tied.intersect(dim_relation(n, d, "!="))
            if not carried.is_empty():
                kind, record = concurrent
                axis = entry[1]
                if (
                    isinstance(kind, str)
                    and kind.startswith("threadIdx")
                    and axis.kind == "reduce"
                    and src.stmt.role == dst.stmt.role == "update"
                    and src.stmt is dst.stmt
                ):
                    cross_thread.add(axis)
                else:
                    problems.append(
                        _describe_carried(schedule, dep, src, dst, carried, kind, record, axis)
                    )
                    return
        tied = tied.intersect(dim_relation(n, d, "="))
    if not tied.is_empty():
        raise InternalError(f"two instances of {src.stmt.name}/{dst.stmt.name} share a time")


def _instances(dep: isl.Map, src: Placed, dst: Placed, violating: isl.Map) -> tuple[str, str]:
    back = src.sched.apply_range(violating).apply_range(dst.sched.reverse())
    point = dep.intersect(back).wrap().sample_point()
    space = point.get_space()
    coords = [
        point.get_coordinate_val(isl.dim_type.set, k).to_python()
        for k in range(space.dim(isl.dim_type.set))
    ]
    n_src = src.domain.dim(isl.dim_type.set)
    return describe_instance(src, coords[:n_src]), describe_instance(dst, coords[n_src:])


def describe_instance(p: Placed, coords: list[int]) -> str:
    """`C[i=3, k=1]`: a statement instance at extended-domain coordinates `coords`."""
    coords = coords[p.prefix_len :]
    op = p.stmt.stage.op
    lows = [0] * len(op.axis) + [getattr(iv.dom.min, "value", 0) for iv in op.reduce_axis]
    parts = [f"{v.name}={c + low}" for v, c, low in zip(p.stmt.root_vars, coords, lows)]
    return f"{p.stmt.stage.name}[{', '.join(parts)}]"


def _describe_carried(schedule, dep, src, dst, carried, kind, record, axis) -> str:
    first, second = _instances(dep, src, dst, carried)
    reduction = src.stmt is dst.stmt and src.stmt.role == "update"
    if reduction:
        target = src.stmt.stage.name
        what = f"iterations {first} and {second} both update the same element of '{target}'"
        if axis.kind != "reduce":
            fix = "make the loop serial or move the concurrency to another loop"
        elif kind in _CONCURRENT:  # a CPU schedule: no threads to combine across
            fix = (
                f"keep the reduce loop serial, or rfactor it: the factored stage's new axis "
                f"can be {kind}"
            )
        else:
            fix = "bind the reduce axis to threadIdx.* for a cross-thread reduction, or rfactor it"
    else:
        what = f"{first} writes a value that {second} reads"
        fix = "make the loop serial, or compute the producer at root"
    if isinstance(record, rec.Bind):
        call = f"bind({axis.name}, {kind})"
    else:
        call = f"{record.kind}({axis.name})"
    return message(
        axis.stage,
        call,
        record.loc,
        f"{what}, but loop '{axis.name}' runs its iterations at the same time ({kind}); {fix}",
    )


def _describe_backwards(schedule, dep, src, dst, violating) -> str:
    first, second = _instances(dep, src, dst, violating)
    last = schedule.records[-1] if schedule.records else None
    stage = getattr(last, "stage", src.stmt.stage.name)
    fix = "restore the order of the dependent loops"
    names = (src.stmt.stage.name, dst.stmt.stage.name)
    scan = next((sc for sc in find_scans(schedule) if all(_in_body(sc, n) for n in names)), None)
    if scan is not None and names[0] != names[1]:
        updates = {w for w, op in scan.writes.items() if w is current(schedule, op.update)}
        both = all(schedule[n].op in updates for n in names)
        fix = (
            f"both run steps of the scan '{scan.stage.name}', and each stage at the root runs "
            "all of its steps in its own loop: "
            + (
                "updates that read each other's states need one loop over the steps for both: "
                "write them as one compute with several outputs (a tuple), which steps them "
                "together"
                if both
                else "compute the one at a loop of the other (inside its step loop)"
            )
        )
    return message(
        stage,
        "schedule",
        getattr(last, "loc", ""),
        f"{second} needs the value {first} produces, but the schedule runs it first; {fix}",
    )


def _in_body(scan, name: str) -> bool:
    return any(member.name == name for member in scan.body)
