"""A scan computed at a loop of a stage that reads its result (``s[S].compute_at(s[C], x)``).

All of the scan's stages (its inits, its updates and the stages between its states and its
updates) are instantiated once per value of ``C``'s loops down to ``x``, like any stage computed
there, and run the scan's steps inside: the inits first, then one loop over the steps holding
every body stage, in the scan's order (`Placement` gives them one schedule dimension).

What each instance computes is the region of every state and body tensor that the readers at
``x`` need, closed under the scan's own reads: a state read by its update at the step before
needs the same elements at every step, and a state read by another state's update needs what
that one reads. The closure is taken over the data coordinates (steps are computed whole, each
instance running all of them); where a step reads elements around the ones it writes
(``state[t - 1, i + 1]``) the region would grow with every step, and that is refused. Each
tensor's buffer is the box of its region at every step, ``[steps, box...]``, indexed relative to
the box's corner as any staged tensor is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import islpy as isl

from ..ir.expr import Expr
from ..ir.printer import expr_str
from ..ir.tensor import Operation
from ..schedule import records as rec
from ..schedule.stage import Stage
from .affine import aff_text
from .loops import leaf_extents, loop_map
from .scan_live import live_steps, within_live
from .scans import Scan
from .statements import Statement

if TYPE_CHECKING:
    from .placement import Placed, Placement

_ROUNDS = 8  # closure rounds: a region that still grows after this many grows with the steps


def members(scan: Scan) -> list[Stage]:
    """The stages placed with the scan: its inits, then the body stages not computed at
    another body stage's loop (those are placed there, as children of it)."""
    schedule = scan.stage.schedule
    inits = []
    for op in scan.ops:
        stage = schedule[op.init.op]
        if stage not in inits:
            inits.append(stage)
    body = [s for s in scan.body if not isinstance(s.attach, (rec.ComputeAt, rec.ComputeInline))]
    return inits + body


def n_inits(scan: Scan) -> int:
    return len({id(scan.stage.schedule[op.init.op]) for op in scan.ops})


def place_scan(pl: Placement, scan: Scan, consumer: Stage, axis, q: int) -> None:
    """Place `scan`'s stages at `consumer`'s loop `axis`, taking sibling slots from `q`."""
    from .placement import _placement_error

    holder, position, keep, prefix_axes = pl._attach_point(consumer, axis)
    pre = holder.template[: position + 1]
    stage = scan.stage
    readers = pl._readers(stage, consumer, pre)
    group = members(scan)
    _check_group(pl, scan, group, prefix_axes)
    statements = [st for member in group for st in pl.by_stage.get(member.name, [])]
    needed = _seeds(stage, readers, keep)
    _close(stage, statements, needed)
    ops = _group_ops(pl, scan, group)
    for name, op in ops.items():
        if name not in needed:
            raise _placement_error(
                stage,
                f"'{op.name}' is computed by the scan but nothing at this loop reads it; "
                "compute the scan at root, or read it here",
            )
    folds = _folds(pl, scan, group, statements, readers)
    corners = _boxes(pl, ops, needed, folds)

    def extended(st: Statement) -> isl.Map:
        name = st.write.get_tuple_name(isl.dim_type.out)
        return _extended(st, needed[name], corners[name], keep)[1]

    live = live_steps(pl, scan, keep, prefix_axes, folds, readers, extended)
    shifts = {name: _zeros(corner, 0, 1) for name, corner in corners.items()}  # step: 0
    for pc in readers:
        n_loops = pc.loops.dim(isl.dim_type.out)
        prefix = pc.loops.project_out(isl.dim_type.out, keep, n_loops - keep)
        _set_offsets(pc, prefix, shifts, prefix_axes, folds)
    q_steps = q + sum(pl._width(member) for member in group[: n_inits(scan)])
    base = 0
    for k, member in enumerate(group):
        if k < n_inits(scan):
            templates = pl._templates(member, pre, q + k)
        else:
            templates = _in_step(pl._templates(member, pre, q_steps), len(pre) + 2, base)
            pl.child_base[(member.name, member.leaves[0])] = base
            pl.step_loops[member.leaves[0]] = stage.name
            base += pl._betas(member, 0)[1] + (2 if pl._split_level(member) == 1 else 1)
        placed = []
        for st in pl.by_stage.get(member.name, []):
            name = st.write.get_tuple_name(isl.dim_type.out)
            region, corner, steps = needed[name], corners[name], live
            if k < n_inits(scan):
                steps = None
            one = _placed(pl, st, region, corner, keep, templates, ops[name], folds[name], steps)
            placed.append(one)
            _set_offsets(placed[-1], _proj(placed[-1].domain, 0, keep), shifts, prefix_axes, folds)
        pl.placed[member.name] = placed
    for member in group:
        pl._place_children(member)


def _check_group(pl: Placement, scan: Scan, group: list[Stage], prefix_axes) -> None:
    """What a scan computed at a loop cannot take: its tensor in args, states shared by the
    threads around the loop, body stages placed elsewhere or with their step loop moved."""
    from .placement import _placement_error

    stage = scan.stage
    if any(op in pl.stored for op in stage.ops):
        raise _placement_error(
            stage,
            f"'{stage.name}' is listed in args, so all of its rows are stored; compute it at "
            "root, or leave it out of args",
        )
    scope = pl.scope(stage)
    relaxed, expanded = pl._relaxed(stage, scope, prefix_axes)
    if relaxed or expanded:
        raise _placement_error(
            stage,
            f"the states of '{stage.name}' would be shared by the threads or virtual threads "
            f"around this loop (scope '{scope}'); compute the scan at a loop bound to no "
            "thread, or inside every thread loop with scope 'local'",
        )
    for member in scan.body:
        if isinstance(member.attach, rec.ComputeAt):
            raise _placement_error(
                member,
                f"'{member.name}' reads a state of '{stage.name}', which is computed at a "
                "loop: inline it, or leave it at root to be computed with the scan",
            )
    for member in group[n_inits(scan) :]:
        _check_step_loop(stage, member)
        if scope == "local":
            pl._check_local_threads(member)


def _boxes(pl: Placement, ops: dict, needed: dict, folds: dict) -> dict[str, isl.Map]:
    """Each tensor's storage, the box of its region by the steps it keeps; returns prefix ->
    the box's corner, per tensor."""
    from .placement import Storage, _corner

    corners = {}
    for name, op in ops.items():
        region = needed[name] = needed[name].coalesce()
        nd = len(op.shape) - 1
        bmin = [region.dim_min(d) for d in range(nd)]
        bmax = [region.dim_max(d) for d in range(nd)]
        corners[name] = isl.Map.from_pw_multi_aff(_corner(region, bmin))
        box = [
            bmax[d].sub(bmin[d]).add_constant_val(isl.Val.one(bmax[d].get_ctx())) for d in range(nd)
        ]
        steps = _steps(pl, op.shape[0] if folds[name] is None else folds[name])
        pl.storage[op] = Storage(
            op,
            [pl._param_bound(steps)] + [pl._param_bound(e) for e in box],
            [pl._constant(steps)] + [pl._constant(e) for e in box],
        )
    return corners


def _placed(
    pl: Placement, st: Statement, region, corner, keep, templates, op, kept, steps=None
) -> Placed:
    """One statement of the scan, over its tensor's region at every step (or at `steps`)."""
    from .placement import Placed

    member = st.stage
    nd = len(op.shape) - 1
    storage = pl.storage[op]
    roots = {member.root_axes[0]: storage.constant[0]}
    roots.update(dict(zip(member.root_axes[1 : nd + 1], storage.constant[1:])))
    roots.update({a: member.extents[a] for a in member.root_axes[nd + 1 :]})
    extents = pl.extents[member.name] = leaf_extents(member, roots)
    ext, to_root, pmap, relative = _extended(st, region, corner, keep, steps)
    lmap, _ = loop_map(member, st.root_space, extents, data_only=st.role == "init")
    store = _proj(ext, keep, keep + 1 + nd).apply_range(_fold(nd, kept))
    return Placed(
        st,
        keep,
        ext,
        to_root,
        pmap.flat_range_product(relative.apply_range(lmap)),
        templates[st.role],
        isl.PwMultiAff.from_map(store),
        pl._root_values(st, to_root),
    )


def _check_step_loop(scan: Stage, member: Stage) -> None:
    """A body stage's steps run in order, one loop shared with the other body stages."""
    from .placement import _placement_error

    step = member.root_axes[0]
    if member.leaves[0] is step and step not in member.binds and step not in member.annotations:
        return
    raise _placement_error(
        scan,
        f"'{member.name}' computes a step of '{scan.name}' at a time, so its step loop "
        f"'{step.name}' must stay its outermost loop, not split, fused, bound or annotated: "
        "the steps run one after another in one loop",
    )


def _steps(pl: Placement, extent: Expr | int) -> isl.PwAff:
    text = str(extent) if isinstance(extent, int) else aff_text(extent, pl.params.names)
    return isl.PwAff(f"{pl.params.prefix} {{ [] -> [({text})] }}")


def _drop_step(m: isl.Map) -> isl.Map:
    """A map to a scan's tensor, without the step coordinate (regions hold every step)."""
    name = m.get_tuple_name(isl.dim_type.out)
    return m.project_out(isl.dim_type.out, 0, 1).set_tuple_name(isl.dim_type.out, name)


def _seeds(scan: Stage, readers: list[Placed], keep: int) -> dict[str, isl.Map]:
    """prefix -> the elements of each state that the readers at the loop read."""
    needed: dict[str, isl.Map] = {}
    for pc in readers:
        n_loops = pc.loops.dim(isl.dim_type.out)
        prefix = pc.loops.project_out(isl.dim_type.out, keep, n_loops - keep)
        for acc in pc.stmt.reads:
            if acc.op in scan.ops:
                image = prefix.reverse().apply_range(pc.to_root.apply_range(acc.relation))
                _add(needed, _drop_step(image))
    return needed


def _close(scan: Stage, statements: list[Statement], needed: dict) -> None:
    """Grow `needed` by what the scan's statements read of each other's tensors to compute it."""
    from .placement import _placement_error

    written = {st.write.get_tuple_name(isl.dim_type.out) for st in statements}
    steps = []
    for st in statements:
        target = st.write.get_tuple_name(isl.dim_type.out)
        writes = _drop_step(st.write).reverse()
        for acc in st.reads:
            if acc.relation.get_tuple_name(isl.dim_type.out) in written:
                steps.append((target, acc, writes.apply_range(_drop_step(acc.relation))))
    for _ in range(_ROUNDS):
        grown = None
        for target, acc, rel in steps:
            if target not in needed:
                continue
            image = needed[target].apply_range(rel)
            name = image.get_tuple_name(isl.dim_type.out)
            if name in needed and image.is_subset(needed[name]):
                continue
            _add(needed, image)
            needed[name] = needed[name].coalesce()
            grown = acc
        if grown is None:
            return
    raise _placement_error(
        scan,
        f"the read '{expr_str(grown.read)}' reaches other elements at every step, so the "
        f"elements computed at this loop would grow with the steps; compute '{scan.name}' at "
        "root",
    )


def _add(needed: dict[str, isl.Map], image: isl.Map) -> None:
    name = image.get_tuple_name(isl.dim_type.out)
    needed[name] = image if name not in needed else needed[name].union(image)


def _group_ops(pl: Placement, scan: Scan, group: list[Stage]) -> dict[str, Operation]:
    """Isl tensor name -> op, for the states and the body stages' own tensors."""
    ops = {pl.params.tensor(op): op for op in scan.stage.ops}
    for member in group:
        for op in member.ops:
            ops.setdefault(pl.params.tensor(op), op)
    return ops


def _extended(st: Statement, region: isl.Map, corner: isl.Map, keep: int, steps=None):
    """(domain, to root, to prefix, to box-relative root) of one statement of the scan: one
    instance per prefix, over every step (or the prefix's `steps`, `scan_live`) and the
    region's box-relative elements there, and exactly the statement's own points."""
    n = st.domain.dim(isl.dim_type.set)
    nd = region.dim(isl.dim_type.out)
    named = corner.set_tuple_name(isl.dim_type.out, region.get_tuple_name(isl.dim_type.out))
    relative = region.sum(named.neg()).wrap().flatten()
    ext = relative.insert_dims(isl.dim_type.set, keep, 1).add_dims(isl.dim_type.set, n - 1 - nd)
    ext = ext.set_tuple_name(st.name)
    total = ext.dim(isl.dim_type.set)
    pmap = _proj(ext, 0, keep)
    xmap = _proj(ext, keep, total)
    lift = _zeros(_zeros(corner, 0, 1), nd + 1, n - 1 - nd)  # steps and reductions: 0
    to_root = xmap.sum(pmap.apply_range(lift)).set_tuple_name(isl.dim_type.out, st.root_space)
    inside = st.domain.set_tuple_name(st.root_space)
    ext = to_root.intersect_range(inside).domain()
    if steps is not None:
        ext = within_live(ext, steps, keep)
    relative_root = xmap.intersect_domain(ext).set_tuple_name(isl.dim_type.out, st.root_space)
    return ext, to_root.intersect_domain(ext), pmap.intersect_domain(ext), relative_root


def _zeros(m: isl.Map, at: int, count: int) -> isl.Map:
    """`m` with `count` output coordinates equal to 0 inserted at `at`, its output unnamed."""
    m = m.reset_tuple_id(isl.dim_type.out).insert_dims(isl.dim_type.out, at, count)
    for d in range(at, at + count):
        m = m.fix_val(isl.dim_type.out, d, 0)
    return m


def _proj(ext: isl.Set, start: int, stop: int) -> isl.Map:
    """ext -> its coordinates [start, stop)."""
    n = ext.dim(isl.dim_type.set)
    m = isl.Map.identity(ext.get_space().map_from_set()).intersect_domain(ext)
    m = m.project_out(isl.dim_type.out, stop, n - stop).project_out(isl.dim_type.out, 0, start)
    return m.reset_tuple_id(isl.dim_type.out)


def _set_offsets(p: Placed, prefix: isl.Map, shifts: dict[str, isl.Map], axes, folds) -> None:
    """`p` reads the scan's tensors relative to the corners of their boxes, in the rows
    of the steps they keep."""
    for acc in p.stmt.reads:
        name = acc.relation.get_tuple_name(isl.dim_type.out)
        if name in shifts:
            if folds[name] is not None:
                p.folds[acc.op] = folds[name]
            shift = shifts[name]
            p.offsets[acc.op] = isl.PwMultiAff.from_map(prefix.apply_range(shift))
            p.offsets_on_loops[acc.op] = (tuple(axes), isl.PwMultiAff.from_map(shift))


def _folds(pl: Placement, scan: Scan, group: list[Stage], statements, readers) -> dict:
    """Isl tensor name -> how many of its last steps each of the scan's tensors keeps (None:
    all of them). A row is overwritten `kept` steps after it was written, so every read of
    it must come before: a read `d` steps back needs d + 1 rows, or d where the read comes
    earlier in the step than the write, or is the writer's own read of the element it
    writes (an update reading its state at the step before reads, then writes, in place).
    The readers at the loop must read the last step only."""
    position = {member.name: k for k, member in enumerate(group)}
    writer: dict[str, tuple[int, Statement]] = {}
    for st in statements:
        if position[st.stage.name] >= n_inits(scan):
            writer[st.write.get_tuple_name(isl.dim_type.out)] = (position[st.stage.name], st)
    kept: dict[str, int | None] = {name: 1 for name in writer}
    for op in scan.ops:  # several init rows: each must survive until it is read
        rows = scan.rows
        name = pl.params.tensor(op)
        if name in kept:
            kept[name] = rows.value if hasattr(rows, "value") else None
    for pc in readers:
        for acc in pc.stmt.reads:
            name = acc.relation.get_tuple_name(isl.dim_type.out)
            if name in kept and not _reads_last_step(pl, acc, name, scan):
                kept[name] = None
    for st in statements:
        for acc in st.reads:
            name = acc.relation.get_tuple_name(isl.dim_type.out)
            if name not in kept or kept[name] is None:
                continue
            back = _steps_back(acc.relation)
            if back is None:
                kept[name] = None
                continue
            w, written_by = writer[name]
            p = position[st.stage.name]
            in_place = written_by is st and _same_element(st, acc)
            need = back if p < w or in_place else back + 1
            kept[name] = max(kept[name], need)
    return kept


def _steps_back(relation: isl.Map) -> int | None:
    """How many steps before its own a read reads, when that is one number."""
    n_in, n_out = relation.dim(isl.dim_type.in_), relation.dim(isl.dim_type.out)
    steps = relation.project_out(isl.dim_type.in_, 1, n_in - 1)
    steps = steps.project_out(isl.dim_type.out, 1, n_out - 1)
    steps = steps.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
    deltas = steps.deltas()
    if deltas.is_empty() or not deltas.is_singleton():
        return None
    value = deltas.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
    return -int(value) if -int(value) >= 0 else None


def _same_element(st: Statement, acc) -> bool:
    """Does the read read, at the step before, the element the statement writes?"""
    pairs = _drop_step(st.write).reverse().apply_range(_drop_step(acc.relation))
    return pairs.is_subset(isl.Map.identity(pairs.get_space()))


def _reads_last_step(pl: Placement, acc, name: str, scan: Scan) -> bool:
    op = next(op for op in scan.ops if pl.params.tensor(op) == name)
    last = aff_text(op.shape[0], pl.params.names)
    read = acc.relation.range()
    n = read.dim(isl.dim_type.set)
    steps = read.project_out(isl.dim_type.set, 1, n - 1).reset_tuple_id()
    wanted = isl.Set(f"{pl.params.prefix} {{ [t] : t = {last} - 1 }}")
    return steps.is_subset(wanted)


def _fold(nd: int, kept: int | None) -> isl.Map:
    """[step, x...] -> [the row that keeps the step, x...]."""
    xs = [f"x{d}" for d in range(nd)]
    row = "t" if kept is None else f"t mod {kept}"
    return isl.Map(f"{{ [{', '.join(['t', *xs])}] -> [{', '.join([row, *xs])}] }}")


def _in_step(templates: dict[str, list], at: int, base: int) -> dict[str, list]:
    """The templates of a body stage with its place inside the step loop moved by `base`."""
    moved = {}
    for role, template in templates.items():
        template = list(template)
        kind, value = template[at]
        template[at] = (kind, value + base)
        moved[role] = template
    return moved


__all__ = ["members", "n_inits", "place_scan"]
