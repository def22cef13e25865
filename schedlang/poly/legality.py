"""Legality: every dataflow dependence must survive the schedule.

Dependences come from isl's dataflow analysis over the algorithm's own order (stages in
topological order, a reduction's init before its updates). In the new schedule each dependence
must go forward (its schedule delta is lexicographically positive; the updates of one reduction
may be reordered among themselves), and no dependence may be
carried by a loop whose iterations run at the same time (parallel, vectorized, bound to blocks,
threads or virtual threads), except a reduction over a loop bound to ``threadIdx.*``, which the
CUDA backend combines across threads. A statement computed at another stage's loop reads
what its own producers computed there correctly by construction of their footprint (and its init
runs before its updates by construction too): its writes are no sources of the analysis, and of
its own reduction only the updates' concurrency is checked, within one instance of the loops it is
computed in. Its reads of what stages at the root write are dependences like any: a scan's body
stage computed at the update's step loop reads the step before, so that loop must stay serial.
Every two updates of one element are checked for concurrency, not only those dataflow links.
"""

from __future__ import annotations

import functools

import islpy as isl

from ..errors import InternalError
from ..schedule import records as rec
from ..schedule.errors import LegalityError, message
from ..schedule.schedule import Schedule
from .compact_schedule import fixed_value
from .isl_calls import Callbacks
from .loops import deferred_fuses
from .placement import Placed, Placement
from .scans import Scan, check_steps, check_steps_alone, current, find_scans, step_order
from .space import Params

_CONCURRENT = ("parallel", "vectorized")


def check_legality(
    schedule: Schedule, placement: Placement, params: Params, scans: list[Scan]
) -> set:
    """Raise `LegalityError` for an illegal schedule; return the cross-thread reduction axes."""
    placed = placement.all()
    if not any(p.prefix_len == 0 for p in placed):
        return set()
    order = {stage.name: k for k, stage in enumerate(schedule.stages)}
    steps = step_order(scans, order)
    width = max(len(p.stmt.root_vars) for p in placed)
    # The states of a scan computed at a loop are read where its placement made them
    # (`scan_placement`); that its steps read only earlier steps is checked on its own.
    inside = {params.tensor(op) for name in placement.scans for op in schedule[name].ops}
    reads = writes = original = None
    for p in placed:
        role = 1 if p.stmt.role == "update" else 0
        n = len(p.stmt.root_vars)
        xs = [f"x{k}" for k in range(n)]
        # The algorithm's order: stage after stage, except that a scan's body runs step
        # after step (`poly.scans`), at the scan's place. Every copy of an instance computed
        # at a loop takes that instance's place.
        name = p.stmt.stage.name
        at = [str(steps[name]), xs[0]] if name in steps else [str(order[name]), "0"]
        outs = at + [str(order[name]), str(role)] + xs + ["0"] * (width - n)
        seq = isl.Map(f"{{ {p.stmt.root_space}[{', '.join(xs)}] -> [{', '.join(outs)}] }}")
        # A copy in a box overhanging the statement's domain reads nothing it needs.
        to_root = p.to_root.intersect_range(p.stmt.domain.set_tuple_name(p.stmt.root_space))
        seq = isl.UnionMap.from_map(to_root.apply_range(seq).intersect_domain(p.domain))
        original = seq if original is None else original.union(seq)
        for acc in p.stmt.reads:
            if acc.relation.get_tuple_name(isl.dim_type.out) in inside:
                continue
            r = isl.UnionMap.from_map(to_root.apply_range(acc.relation))
            reads = r if reads is None else reads.union(r)
        if p.prefix_len:  # its values live in its own buffer, read by construction
            continue
        for write in [p.stmt.write, *p.stmt.other_writes]:
            w = isl.UnionMap.from_map(p.to_root.apply_range(write))
            writes = w if writes is None else writes.union(w)
    if reads is None or writes is None:
        return set()
    info = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
    flow = info.set_schedule_map(original).compute_flow()
    if scans:
        check_steps(flow.get_may_no_source(), scans, params.tensor)
    for name in placement.scans:
        check_steps_alone(placement, placement.scans[name], params)
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
    # a dimension both statements hold at one constant (most of a padded schedule's) orders
    # no pair and carries none: the tied pairs stay tied there
    values = [(fixed_value(src.sched, d), fixed_value(dst.sched, d)) for d in range(n)]
    constant = {d for d, (a, b) in enumerate(values) if a is not None and a == b}
    tied = pairs  # the pairs whose times agree on the dimensions before d
    for d in range(n):
        if d in constant:
            continue
        if tied.is_empty():
            return
        backwards = tied.intersect(dim_relation(n, d, "<"))
        if not reordering_ok and not backwards.is_empty():
            problems.append(
                _steps_on_threads(schedule, dep, src, dst, backwards)
                or _describe_backwards(schedule, dep, src, dst, backwards)
            )
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
    sizes, coords = sample_values(dep.intersect(back).wrap().sample_point())
    n_src = src.domain.dim(isl.dim_type.set)
    first = describe_instance(src, coords[:n_src], sizes)
    return first, describe_instance(dst, coords[n_src:], sizes)


def sample_values(point: isl.Point) -> tuple[dict[str, int], list[int]]:
    """The sizes and the coordinates of `point`."""
    space = point.get_space()
    sizes = {
        space.get_dim_name(isl.dim_type.param, k): point.get_coordinate_val(
            isl.dim_type.param, k
        ).to_python()
        for k in range(space.dim(isl.dim_type.param))
    }
    coords = [
        point.get_coordinate_val(isl.dim_type.set, k).to_python()
        for k in range(space.dim(isl.dim_type.set))
    ]
    return sizes, coords


def describe_instance(p: Placed, coords: list[int], sizes: dict[str, int]) -> str:
    """`C[i=3, k=1]`: a statement instance at extended-domain coordinates `coords` (and
    `sizes`), by the values of its own variables (not those relative to the box of a copy
    computed at a loop)."""
    fixed = " and ".join(f"{name} = {value}" for name, value in sizes.items()) or "0 = 0"
    listed = ", ".join(sizes)
    point = isl.Set(f"[{listed}] -> {{ [{', '.join(str(c) for c in coords)}] : {fixed} }}")
    point = point.set_tuple_name(p.domain.get_tuple_name()).align_params(p.domain.get_space())
    values = point.intersect(p.domain).apply(isl.Map.from_pw_multi_aff(p.root_values))
    sample = values.sample_point()
    if sample.is_void():
        raise InternalError(f"{p.stmt.name} has no instance at {coords}")
    parts = [
        f"{v.name}={sample.get_coordinate_val(isl.dim_type.set, k).to_python()}"
        for k, v in enumerate(p.stmt.root_vars)
    ]
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
        fix = _scan_fix(schedule, src, dst, axis) or (
            "make the loop serial, or compute the producer at root"
        )
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


def _steps_on_threads(schedule, dep, src: Placed, dst: Placed, backwards) -> str | None:
    """A scan's steps on threads: the steps of one loop bound to threadIdx.* run at the same
    time. The loop moves to the end of the schedule (as threads do), so the step before
    comes out after the step that reads it, but what went wrong is the binding."""
    if _stepped_scan(schedule, src, dst) is None:
        return None
    n = backwards.dim(isl.dim_type.in_)
    for d, entry in enumerate(src.template):
        concurrent = _kind_of(schedule, entry)
        if concurrent is None or entry != dst.template[d]:
            continue
        carried = backwards.intersect(dim_relation(n, d, "!="))
        if not carried.is_empty():
            kind, record = concurrent
            return _describe_carried(schedule, dep, src, dst, carried, kind, record, entry[1])
    return None


def _stepped_scan(schedule, src: Placed, dst: Placed) -> Scan | None:
    """The scan whose step `src` writes and whose later step `dst` computes, if any."""
    for scan in find_scans(schedule):
        writes = any(op in scan.writes for op in src.stmt.stage.ops)
        if writes and _in_body(scan, dst.stmt.stage.name):
            return scan
    return None


def _scan_fix(schedule, src: Placed, dst: Placed, axis) -> str | None:
    """The advice for a dependence from one step of a scan to a later one."""
    scan = _stepped_scan(schedule, src, dst)
    if scan is None:
        return None
    reader = dst.stmt.stage.name
    updates = {current(schedule, op.update) for op in scan.ops}
    through = "" if dst.stmt.stage.op in updates else f" (through '{reader}')"
    return (
        f"loop '{axis.name}' runs the steps of the scan '{scan.stage.name}', and each step "
        f"reads an earlier one{through}, so the steps run one after another: keep "
        f"'{axis.name}' serial and run a loop inside it at the same time instead"
    )


def _describe_backwards(schedule, dep, src, dst, violating) -> str:
    first, second = _instances(dep, src, dst, violating)
    last = schedule.records[-1] if schedule.records else None
    stage = getattr(last, "stage", src.stmt.stage.name)
    fix = "restore the order of the dependent loops"
    names = (src.stmt.stage.name, dst.stmt.stage.name)
    scan = next((sc for sc in find_scans(schedule) if all(_in_body(sc, n) for n in names)), None)
    attach = schedule[names[1]].attach
    if scan is not None and names[0] != names[1] and isinstance(attach, rec.ComputeAt):
        fix = (
            f"'{names[1]}' runs steps of the scan '{scan.stage.name}' but is computed at loop "
            f"'{attach.axis.name}' of '{attach.target}', outside the loop over the steps, so it "
            "computes steps before the steps they read: compute it at the loop over the steps, "
            "or inside it"
        )
    elif scan is not None and names[0] != names[1]:
        fix = (
            f"both run steps of the scan '{scan.stage.name}', and a stage at the root whose "
            "step loop is split, fused, bound or annotated runs all of its steps in its own "
            "loop: keep the step loop outermost and plain (the stages at the root then share "
            "the scan's loop over the steps), or compute the one at a loop of the other"
        )
    return message(
        stage,
        "schedule",
        getattr(last, "loc", ""),
        f"{second} needs the value {first} produces, but the schedule runs it first; {fix}",
    )


def _in_body(scan, name: str) -> bool:
    return any(member.name == name for member in scan.body)
