"""Where every statement instance runs: the schedule map, compute_at footprints and boxes.

Each statement gets an *extended domain* ``S<k>[prefix..., roots...]``: a statement of a stage
computed at a consumer's loop is instantiated once per value of the consumer's loops down to that
loop (the prefix), over exactly the elements the consumer reads there (the footprint: the image of
the consumer's accesses). Its roots are box-relative (TE's semantics: its axes start at 0 at the
box minimum), and its buffer has the size of the box bounding the footprint.

The schedule is the classic 2d+1 layout: ``[beta0, loop0, beta1, loop1, ...]`` where the betas
order siblings (producers computed at a loop come before the rest of the consumer's body, a
reduction's init before its update). A statement's `template` says, for each schedule
dimension, whether it is a constant beta or which stage's loop it carries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..errors import InternalError
from ..ir.tensor import ComputeOp, Operation
from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.errors import BindError, PlacementError, message
from ..schedule.schedule import Schedule
from ..schedule.stage import HARDWARE_TAGS, Stage
from .box_fill import box_clamps, box_domain
from .footprint_box import division_count, division_depth, simplest, too_large
from .isl_calls import OutOfOperations, budget
from .loops import init_leaves, isl_leaves, leaf_extents, loop_map
from .scan_placement import members, n_inits, place_scan
from .scan_root import place_steps, stepped
from .scans import find_scans
from .space import Params
from .statements import Statement
from .stored import check_stored_at

THREAD_TAGS = tuple(t for t in HARDWARE_TAGS if t.startswith("threadIdx"))
# isl operations the box of one compute_at footprint may take. The examples' kernels take
# under 20 000, a chain of six X-shaped stencils (footprints of many pieces) up to 200 000. A
# loop index through a fuse of fused loops and a split of that (persistent blocks over groups
# of tiles) nests floors in floors: isl's bounds of it did not end in 300 s, and its operations
# grow dearer as it goes (100 000 in 5 s, 300 000 in 48 s). Nested divisions get the smaller
# budget: none of the examples' footprints nests them.
BOX_OPERATIONS = 1_000_000
NESTED_BOX_OPERATIONS = 100_000
# A footprint whose pieces hold more integer divisions than this is refused before isl bounds
# it. The tests' and examples' footprints hold at most 6 (over 3,000 of them); a persistent
# attention schedule over a part tile of rows reads one of its stages through 121 (isl's
# bounds took 7 minutes) and the scores through 894 in three pieces.
MAX_DIVISIONS = 64


@dataclass
class Placed:
    stmt: Statement
    prefix_len: int
    domain: isl.Set  # extended domain S<k>[prefix..., roots...]
    to_root: isl.Map  # extended -> root space
    loops: isl.Map  # extended -> [prefix loops..., own leaves...]
    template: list[tuple[str, object]]
    store_index: isl.PwMultiAff  # extended -> index into the stage's buffer
    root_values: isl.PwMultiAff  # extended -> values of stmt.root_vars
    offsets: dict[Operation, isl.PwMultiAff] = field(default_factory=dict)
    # The same offsets as functions of the loops named (those around the point where the
    # tensor is computed), for when the composition above comes out in pieces (`from_isl`).
    offsets_on_loops: dict[Operation, tuple[tuple[Axis, ...], isl.PwMultiAff]] = field(
        default_factory=dict
    )
    sched: isl.Map | None = None
    shared_tags: set[str] = field(default_factory=set)  # thread tags its loops share (_share)
    # The block size per thread tag of the kernel it is part of (a root stage and the stages
    # computed inside it): a statement with no loop of a tag runs on thread 0 of it.
    kernel_threads: dict[str, int] = field(default_factory=dict)
    # A copy filling its whole box (`box_fill`): root dimension -> (extent, granularity)
    clamps: dict[int, tuple[int, int]] = field(default_factory=dict)
    # Tensors of a scan kept for its last few steps (`scan_placement`): read at step t in
    # the row t % steps kept
    folds: dict[Operation, int] = field(default_factory=dict)


@dataclass
class Storage:
    """The buffer of a computed (non-inlined, non-output) stage computed at another's loop.

    Its buffer's first dimensions (`leads`, their extents) give each virtual thread around it
    its own part (TE expands such buffers the same way); the others are the box of the
    footprint (`extents`, with `constant` bounds where they exist)."""

    op: Operation
    extents: list[isl.PwAff]  # per box dimension, over the parameters
    constant: list[int | None]  # the extents' constant bounds where they exist
    leads: list[int] = field(default_factory=list)


def _proj(n_in: int, keep: list[int], name: str | None = None, out: str | None = None) -> isl.Map:
    xs = [f"x{k}" for k in range(n_in)]
    src = f"{name}[{', '.join(xs)}]" if name else f"[{', '.join(xs)}]"
    dst = (
        f"{out}[{', '.join(xs[k] for k in keep)}]" if out else f"[{', '.join(xs[k] for k in keep)}]"
    )
    return isl.Map(f"{{ {src} -> {dst} }}")


def _free(n: int, dims: list[int]) -> isl.Map:
    """``[p] -> [q]`` with ``q = p`` except on `dims`, which are free."""
    ps = [f"p{k}" for k in range(n)]
    qs = [f"q{k}" for k in range(n)]
    same = " and ".join(f"{qs[k]} = {ps[k]}" for k in range(n) if k not in dims) or "0 = 0"
    return isl.Map(f"{{ [{', '.join(ps)}] -> [{', '.join(qs)}] : {same} }}")


def _unbounded(producer: Stage, prefix: list[Axis], why: str) -> str:
    """Why the box of `producer`'s footprint at loops `prefix` was not computed: `why`, then
    the way out."""
    loops = ", ".join(a.name for a in prefix)
    return (
        f"what '{producer.name}' reads at loops {loops} {why}: an index through several "
        "splits (one with a tail) and fuses of split loops multiplies and nests its divisions; "
        "make the splits divide their loops (whole tiles), split or fuse the consumer's loops "
        "fewer times, or compute the stage at another loop"
    )


def _placement_error(producer: Stage, what: str) -> PlacementError:
    """An error about where `producer` is computed, pointing at its compute_at."""
    attach = producer.attach
    call = f"compute_at(s[{attach.target}], {attach.axis.name})"
    return PlacementError(message(producer.name, call, attach.loc, what))


def _check_attach_leaf(producer: Stage, consumer: Stage) -> None:
    """The loop a stage is computed at must still be a loop of its consumer: a split or fuse
    of it afterwards replaces it with loops the compute_at did not choose between."""
    axis = producer.attach.axis
    if axis in consumer.leaves:
        return
    loops = ", ".join(a.name for a in consumer.leaves)
    raise _placement_error(
        producer,
        f"'{axis.name}' is no longer a loop of '{consumer.name}': it was split or fused after "
        f"this compute_at; compute at one of the loops that replaced it ({loops})",
    )


def largest_value(extent: isl.PwAff, context: isl.Set) -> int | None:
    """The largest value of `extent` under `context`, when it has one. Taken over the set of its
    values: an extent of a fused loop can be a rational expression that is integral on its
    domain (``(3 + f)/3 : f mod 3 = 0``), which `PwAff.max_val` refuses."""
    values = isl.Map.from_pw_aff(extent).range().intersect_params(context)
    bound = values.dim_max_val(0)
    return int(bound.to_python()) if bound.is_int() else None


def _kind(entry: tuple) -> str:
    """What a schedule dimension is for one statement: a loop, or which constant."""
    return "dim" if entry[0] == "dim" else f"beta {entry[1]}"


def _ndims(s: isl.Set) -> int:
    return s.dim(isl.dim_type.set)


class Placement:
    """Builds `Placed` statements and `Storage` for a schedule (see the module docstring)."""

    def __init__(
        self,
        schedule: Schedule,
        statements: list[Statement],
        params: Params,
        stored: frozenset[Operation] = frozenset(),
    ) -> None:
        self.schedule = schedule
        self.params = params
        self.stored = stored  # intermediates in args: stored whole in the caller's arrays
        self.by_stage: dict[str, list[Statement]] = {}
        for st in statements:
            self.by_stage.setdefault(st.stage.name, []).append(st)
        self.placed: dict[str, list[Placed]] = {}
        self.storage: dict[Operation, Storage] = {}
        # Loop extents at lowering time: an attached stage's come from its box.
        self.extents: dict[str, dict[Axis, int | None]] = {}
        self.children: dict[str, dict[Axis, list[Stage]]] = {}
        # Scans computed at a loop, and the stages placed with them (`scan_placement`).
        self.scans = {
            scan.stage.name: scan
            for scan in find_scans(schedule)
            if isinstance(scan.stage.attach, rec.ComputeAt)
        }
        self.in_scan = {m.name: scan.stage for scan in self.scans.values() for m in members(scan)}
        self.child_base: dict[tuple[str, Axis], int] = {}  # first slot of children at a loop
        self.step_loops: dict[Axis, str] = {}  # the step loops of placed scans -> the scan
        for stage in schedule.stages:
            placed_here = stage.name in self.by_stage or stage.name in self.scans
            if isinstance(stage.attach, rec.ComputeAt) and placed_here:
                _check_attach_leaf(stage, schedule[stage.attach.target])
                at = self.children.setdefault(stage.attach.target, {})
                at.setdefault(stage.attach.axis, []).append(stage)
        # Scans at the root, and their body stages run in one step loop (`scan_root`).
        steps = stepped(find_scans(schedule))
        step_of = {m.name: (name, group) for name, group in steps.items() for m in group}
        self.stepped = set(step_of)  # their buffers hold every step (`insert_allocations`)
        slot = 0
        kernels = []
        for stage in schedule.stages:
            if stage.name in self.in_scan:
                continue
            if stage.name in step_of:
                scan_name, group = step_of[stage.name]
                if stage is group[-1]:
                    before = set(self.placed)
                    place_steps(self, scan_name, group, slot)
                    slot += 1
                    kernels.append([n for n in self.placed if n not in before])
                continue
            if stage.name in self.by_stage and not isinstance(stage.attach, rec.ComputeAt):
                before = set(self.placed)
                self._place_root(stage, slot)
                slot += self._width(stage)
                kernels.append([n for n in self.placed if n not in before])
        if not self._any_block_loop():  # the GPU target runs it all as one block
            kernels = [list(self.placed)]
        for names in kernels:
            self._kernel_threads(names)
        self._pad()

    def _any_block_loop(self) -> bool:
        return any(
            (self._tag(entry[1]) or "").startswith("blockIdx")
            for placed in self.placed.values()
            for p in placed
            for entry in p.template
            if entry[0] == "dim"
        )

    # -- templates ---------------------------------------------------------------------

    def _width(self, stage: Stage) -> int:
        """Sibling slots the stage occupies: 2 when its init and update are separate nests; a
        scan's, one per init and one for the loop over its steps."""
        if stage.name in self.scans:
            inits = members(self.scans[stage.name])[: n_inits(self.scans[stage.name])]
            return sum(self._width(init) for init in inits) + 1
        return 2 if self._split_level(stage) == 0 else 1

    def _split_level(self, stage: Stage) -> int | None:
        """Index of the first reduce leaf (where init and update part), or None."""
        if not isinstance(stage.op, ComputeOp) or not stage.op.reduce_axis:
            return None
        return next(t for t, a in enumerate(self._loops(stage)) if a.kind == "reduce")

    def _loops(self, stage: Stage) -> list[Axis]:
        """The loops isl schedules for `stage` (its leaves, but for deferred fuses)."""
        return isl_leaves(stage, self.extents.get(stage.name, stage.extents))

    def _betas(self, stage: Stage, q: int) -> list[int]:
        """betas[0] = q; betas[t + 1] = slots taken by stages computed at leaf t."""
        at = self.children.get(stage.name, {})
        return [q] + [sum(self._width(c) for c in at.get(a, [])) for a in self._loops(stage)]

    def _templates(self, stage: Stage, pre: list, q: int) -> dict[str, list]:
        betas = self._betas(stage, q)
        p0 = self._split_level(stage)
        loops = self._loops(stage)
        full = list(pre) + [("beta", betas[0])]
        for t, a in enumerate(loops):
            full += [("dim", a), ("beta", betas[t + 1])]
        if p0 is None:
            return {"compute": full}
        cut = len(pre) + 2 * p0  # index of the beta at level p0
        update = list(full)
        update[cut] = ("beta", full[cut][1] + 1)
        init = full[: cut + 1]
        for a in init_leaves(stage, self.extents.get(stage.name, stage.extents))[p0:]:
            init += [("dim", a), ("beta", 0)]
        return {"init": init, "update": update}

    # -- placing statements ------------------------------------------------------------

    def _place_root(self, stage: Stage, slot: int, templates: dict | None = None) -> None:
        templates = templates or self._templates(stage, [], slot)
        placed = []
        for st in self.by_stage[stage.name]:
            n = _ndims(st.domain)
            ext = st.domain.set_tuple_name(st.name)
            to_root = _proj(n, list(range(n)), st.name, st.root_space).intersect_domain(ext)
            lmap, _ = loop_map(stage, st.root_space, stage.extents, data_only=st.role == "init")
            store = _proj(n, list(range(len(stage.op.axis))), st.name).intersect_domain(ext)
            placed.append(
                Placed(
                    st,
                    0,
                    ext,
                    to_root,
                    to_root.apply_range(lmap),
                    templates[st.role],
                    isl.PwMultiAff.from_map(store),
                    self._root_values(st, to_root),
                )
            )
        self.placed[stage.name] = placed
        self.extents[stage.name] = dict(stage.extents)
        self._place_children(stage)

    def _root_values(self, st: Statement, to_root: isl.Map) -> isl.PwMultiAff:
        """extended -> the statement's root variables (reduce axes shifted back by their min)."""
        n = len(st.root_vars)
        n_data = len(st.stage.op.axis)
        xs = [f"x{k}" for k in range(n)]
        outs = list(xs[:n_data])
        for k, iv in enumerate(st.stage.op.reduce_axis[: n - n_data]):
            low = self._aff(iv.dom.min)
            outs.append(f"{xs[n_data + k]} + {low}")
        shift = isl.Map(
            f"{self.params.prefix} {{ {st.root_space}[{', '.join(xs)}] -> [{', '.join(outs)}] }}"
        )
        return isl.PwMultiAff.from_map(to_root.apply_range(shift))

    def _aff(self, e) -> str:
        from .affine import aff_text

        return aff_text(e, self.params.names)

    def _place_children(self, consumer: Stage) -> None:
        """Place the stages computed at `consumer`'s loops. Siblings run in stage order (a
        producer before its readers), but are placed readers first: a stage's footprint is
        what its readers need, and a reader may itself be computed at `consumer` (TE's
        ``AA -> AL -> CC`` chains, all at CC's loops)."""
        slots = []
        for axis, producers in self.children.get(consumer.name, {}).items():
            q = self.child_base.get((consumer.name, axis), 0)
            for producer in producers:
                slots.append((producer, axis, q))
                q += self._width(producer)
        order = {stage.name: k for k, stage in enumerate(self.schedule.stages)}
        for producer, axis, q in sorted(slots, key=lambda slot: -order[slot[0].name]):
            if producer.name in self.scans:
                place_scan(self, self.scans[producer.name], consumer, axis, q)
            else:
                self._place_attached(producer, consumer, axis, q)

    def _attach_point(self, consumer: Stage, axis: Axis):
        """(the placed statement of `consumer` holding loop `axis`, the loop's place in its
        template, the number of loops down to it, those loops)."""
        holder = next(p for p in self.placed[consumer.name] if ("dim", axis) in p.template)
        position = holder.template.index(("dim", axis))
        prefix_axes = [entry[1] for entry in holder.template[: position + 1] if entry[0] == "dim"]
        return holder, position, len(prefix_axes), prefix_axes

    def _place_attached(self, producer: Stage, consumer: Stage, axis: Axis, q: int) -> None:
        holder, position, keep, prefix_axes = self._attach_point(consumer, axis)
        readers = self._readers(producer, consumer, holder.template[: position + 1])
        base = holder
        scope = self.scope(producer)
        if scope == "local":
            self._check_local_threads(producer)
        if scope == "shared":
            self._check_inside_blocks(producer, holder.template[position + 1 :])
        relaxed, expanded = self._relaxed(producer, scope, prefix_axes)
        footprint = None
        prefix_maps = {}
        for pc in readers:
            n_loops = pc.loops.dim(isl.dim_type.out)
            prefix = pc.loops.project_out(isl.dim_type.out, keep, n_loops - keep)
            prefix_maps[id(pc)] = prefix
            for acc in pc.stmt.reads:
                if acc.op not in producer.ops:
                    continue
                image = prefix.reverse().apply_range(pc.to_root.apply_range(acc.relation))
                # The outputs of a multi-output stage share one box: name them as one.
                image = image.set_tuple_name(isl.dim_type.out, self.params.tensor(producer.op))
                footprint = image if footprint is None else footprint.union(image)
        needed = footprint
        if relaxed:
            needed = _free(keep, relaxed).apply_range(footprint)
        needed = needed.coalesce()
        whole = producer.op in self.stored
        if whole:
            check_stored_at(self.schedule, producer.name, needed, prefix_axes)
        nd = len(producer.op.axis)
        domains = None if whole else [st.domain for st in self.by_stage[producer.name]]
        divisions = division_count(needed)
        if divisions > MAX_DIVISIONS:
            why = (
                f"is a set of {divisions} integer divisions (more than {MAX_DIVISIONS}: isl "
                "would take minutes or hours to bound it)"
            )
            raise _placement_error(producer, _unbounded(producer, prefix_axes, why))
        operations = BOX_OPERATIONS if division_depth(needed) < 2 else NESTED_BOX_OPERATIONS
        try:
            with budget(needed.get_ctx(), operations):
                bmin = [needed.dim_min(d) for d in range(nd)]
                bmax = [needed.dim_max(d) for d in range(nd)]
                needed = simplest(needed, bmin, bmax, domains)
        except OutOfOperations:
            why = f"takes isl more than {operations:,} operations to bound (minutes)"
            refusal = _unbounded(producer, prefix_axes, why)
            raise _placement_error(producer, refusal) from None
        self._refuse_if_large(producer, needed, f"what '{producer.name}' computes at this loop")
        bmin_pma = _corner(needed, bmin)
        tensor = self.params.tensor(producer.op)
        bmin_map = isl.Map.from_pw_multi_aff(bmin_pma).set_tuple_name(isl.dim_type.out, tensor)
        lead_map = _proj(keep, expanded)  # prefix -> the virtual-thread indices of the parts
        shift = bmin_map.reset_tuple_id(isl.dim_type.out)
        if expanded:
            shift = lead_map.flat_range_product(shift)
        on_loops = (tuple(prefix_axes), isl.PwMultiAff.from_map(shift))
        for pc in readers if not whole else ():
            offset = isl.PwMultiAff.from_map(prefix_maps[id(pc)].apply_range(shift))
            for op in producer.ops:
                pc.offsets[op] = offset
                pc.offsets_on_loops[op] = on_loops
        extents = [
            bmax[d].sub(bmin[d]).add_constant_val(isl.Val.one(bmax[d].get_ctx())) for d in range(nd)
        ]
        attach_dim = len(base.template[: self._dim_position(base.template, axis) + 1]) - 1
        box_constant = [self._constant(e) for e in extents]
        leads = [self._lead_extent(producer, prefix_axes[d]) for d in expanded]
        bounds = [self._param_bound(e) for e in extents]
        for op in producer.ops:
            self.storage[op] = Storage(op, bounds, box_constant, leads)
        roots = dict(zip(producer.root_axes, box_constant))
        roots.update({a: producer.extents[a] for a in producer.root_axes[nd:]})
        extents = self.extents[producer.name] = leaf_extents(producer, roots)
        clamps = (
            None
            if whole
            else box_clamps(
                self.schedule,
                producer,
                self.by_stage[producer.name],
                bmin,
                box_constant,
                extents,
                bool(expanded),
                self.params.context,
            )
        )
        if clamps is None:
            relative = needed.sum(bmin_map.neg()).wrap().flatten()
        else:
            relative = box_domain(needed, box_constant)
        pre = base.template[: attach_dim + 1]
        templates = self._templates(producer, pre, q)
        placed = []
        for st in self.by_stage[producer.name]:
            ext = relative
            n_red = len(st.root_vars) - nd
            if n_red:
                red = st.domain.project_out(isl.dim_type.set, 0, nd).reset_tuple_id()
                ext = ext.flat_product(red)
            ext = ext.set_tuple_name(st.name)
            total = _ndims(ext)
            pmap = _proj(total, list(range(keep)), st.name).intersect_domain(ext)
            xmap = _proj(total, list(range(keep, keep + nd)), st.name).intersect_domain(ext)
            data = xmap.sum(pmap.apply_range(bmin_map.reset_tuple_id(isl.dim_type.out)))
            to_root, relative_root = data, xmap
            store = data if whole else xmap
            if expanded:
                store = pmap.apply_range(lead_map).flat_range_product(xmap)
            if n_red:
                rmap = _proj(total, list(range(keep + nd, total)), st.name).intersect_domain(ext)
                to_root = data.flat_range_product(rmap)
                relative_root = xmap.flat_range_product(rmap)
            to_root = to_root.set_tuple_name(isl.dim_type.out, st.root_space)
            relative_root = relative_root.set_tuple_name(isl.dim_type.out, st.root_space)
            lmap, _ = loop_map(producer, st.root_space, extents, data_only=st.role == "init")
            # The producer's loops run over box-relative coordinates, as TE's do.
            loops = pmap.flat_range_product(relative_root.apply_range(lmap))
            self._refuse_if_large(producer, loops, f"the loops of '{producer.name}' there")
            shared_tags = {self._tag(prefix_axes[d]) for d in relaxed} - {"vthread"}
            if relaxed:
                ext = self._share(producer, st, ext, loops, keep, prefix_axes, relaxed)
                to_root = to_root.intersect_domain(ext)
                store = store.intersect_domain(ext)
                loops = loops.intersect_domain(ext)
            placed.append(
                Placed(
                    st,
                    keep,
                    ext,
                    to_root,
                    loops,
                    templates[st.role],
                    isl.PwMultiAff.from_map(store),
                    self._root_values(st, to_root),
                    shared_tags=shared_tags,
                    clamps=clamps or {},
                )
            )
        self.placed[producer.name] = placed
        self._place_children(producer)

    def _refuse_if_large(self, producer: Stage, relation: isl.Map, what: str) -> None:
        """A placement isl could only finish in minutes is refused at once (`too_large`)."""
        refusal = too_large(relation, producer.name, what)
        if refusal is not None:
            raise _placement_error(producer, refusal)

    def _kernel_threads(self, names: list[str]) -> None:
        group = [p for name in names for p in self.placed[name]]
        threads: dict[str, int] = {}
        for p in group:
            for entry in p.template:
                tag = self._tag(entry[1]) if entry[0] == "dim" else None
                extent = self.extents[entry[1].stage].get(entry[1]) if tag else None
                if tag in THREAD_TAGS and extent is not None:
                    threads[tag] = max(threads.get(tag, 1), extent)
        for p in group:
            p.kernel_threads = threads

    # -- memory scopes -------------------------------------------------------------------

    def scope(self, stage: Stage) -> str:
        """The stage's memory scope: as set, else from where it is computed (as TE infers
        it): inside thread loops "local", inside block loops "shared", else "global"."""
        if stage.scope is not None:
            return stage.scope
        if stage.op in self.stored:
            return "global"
        tags = self._enclosing_tags(stage)
        if any(t.startswith("threadIdx") or t == "vthread" for t in tags):
            return "local"
        if any(t.startswith("blockIdx") for t in tags):
            return "shared"
        return "global"

    def _enclosing_tags(self, stage: Stage) -> list[str]:
        """Hardware tags of the loops around the point where `stage` is computed."""
        tags = []
        stage = self.in_scan.get(stage.name, stage)  # placed where its scan is
        while isinstance(stage.attach, rec.ComputeAt):
            target = self.schedule[stage.attach.target]
            upto = target.leaves.index(stage.attach.axis) + 1
            tags += [target.binds[a] for a in target.leaves[:upto] if a in target.binds]
            stage = self.in_scan.get(target.name, target)
        return tags

    def _relaxed(self, producer: Stage, scope: str, prefix_axes: list[Axis]):
        """Prefix loops over which the buffer is shared (`relaxed`: its box covers all their
        values and it is computed once for all of them) and loops it is expanded over
        (`expanded`: its box covers all their values, each computes its own part).

        As in TE: "shared" memory is shared by the threads and the virtual threads of a block;
        "local" and "global" buffers get a part per virtual thread (TE's virtual-thread
        injection expands them), since virtual threads interleave in one thread.
        """
        if producer.op in self.stored:
            return [], []  # stored at absolute indices: no parts to share or expand
        tags = [self._tag(a) for a in prefix_axes]
        if scope == "global" and any(t is not None and t != "vthread" for t in tags):
            raise _placement_error(
                producer,
                f"'{producer.name}' has scope 'global' but is computed inside loops bound to "
                f"{', '.join(t for t in tags if t)}: one global buffer would be written by "
                "every block and thread at once; use set_scope('shared') or "
                "set_scope('local'), or compute it at root",
            )
        virtual = [k for k, t in enumerate(tags) if t == "vthread"]
        if scope != "shared":
            return [], virtual
        threads = [k for k, t in enumerate(tags) if t is not None and t.startswith("threadIdx")]
        return sorted(threads + virtual), []

    def _check_inside_blocks(self, producer: Stage, inner: list) -> None:
        """A "shared" buffer belongs to a block: it must be computed inside the block loops."""
        for kind, value in inner:
            tag = self._tag(value) if kind == "dim" else None
            if tag is not None and tag.startswith("blockIdx"):
                raise _placement_error(
                    producer,
                    f"'{producer.name}' has scope 'shared' (one copy per block) but is "
                    f"computed outside loop '{value.name}' of '{value.stage}', bound to "
                    f"{tag}; compute it at or inside the block loops",
                )

    def _check_local_threads(self, producer: Stage) -> None:
        """A "local" buffer is one copy per thread: each thread must compute all of its own
        copy, so the stage's loops cannot be spread over threads."""
        for axis, tag in producer.binds.items():
            if tag.startswith("threadIdx"):
                record = self.schedule.record_for(rec.Bind, axis)
                raise BindError(
                    message(
                        producer.name,
                        f"bind({axis.name}, {tag})",
                        record.loc,
                        f"'{producer.name}' has scope 'local' (a copy per thread), so each thread "
                        "must compute its whole copy; spreading its loop over threads leaves "
                        "the rest of every copy unset. Make it 'shared' to split its work "
                        "between threads, or do not bind its loops",
                    )
                )

    def _lead_extent(self, producer: Stage, axis: Axis) -> int:
        """The extent of virtual-thread loop `axis`, by which `producer`'s buffer is expanded."""
        extent = self.extents[axis.stage].get(axis)
        if extent is None:
            record = self.schedule.record_for(rec.Bind, axis)
            raise BindError(
                message(
                    axis.stage,
                    f"bind({axis.name}, vthread)",
                    record.loc,
                    f"a virtual thread needs a constant extent ('{producer.name}' gets a part "
                    "per virtual thread); split the loop by a constant factor first",
                )
            )
        return extent

    def _tag(self, axis: Axis) -> str | None:
        return self.schedule[axis.stage].binds.get(axis)

    def _share(self, producer, st, ext, loops, keep, prefix_axes, relaxed) -> isl.Set:
        """Which thread computes each element of a shared buffer: the producer's own loop bound
        to the same tag decides (thread t runs the instances whose loop has value t); without
        one, thread 0 of that dimension computes everything (virtual thread 0, always)."""
        n = loops.dim(isl.dim_type.out)
        vs = [f"v{k}" for k in range(n)]
        own = [a for a in producer.leaves if not (st.role == "init" and a.kind == "reduce")]
        conditions = []
        for d in relaxed:
            tag = self._tag(prefix_axes[d])
            mine = [
                j for j, a in enumerate(own) if tag != "vthread" and producer.binds.get(a) == tag
            ]
            conditions.append(f"{vs[d]} = {vs[keep + mine[0]] if mine else 0}")
        where = isl.Set(f"{{ [{', '.join(vs)}] : {' and '.join(conditions)} }}")
        return ext.intersect(loops.intersect_range(where).domain())

    def _dim_position(self, template: list, axis: Axis) -> int:
        for k, entry in enumerate(template):
            if entry == ("dim", axis):
                return k
        raise InternalError(f"loop {axis} is not in the template {template}")

    def _readers(self, producer: Stage, consumer: Stage, path: list) -> list[Placed]:
        """The placed statements that read `producer`: `consumer`'s, or those of stages
        computed inside `consumer`'s loops at or below the attach point (`path` is the
        schedule template down to it). Anyone else would read values that exist only there."""
        readers = []
        for name, statements in self.by_stage.items():
            for st in statements:
                if name == producer.name or not any(acc.op in producer.ops for acc in st.reads):
                    continue
                placed = [p for p in self.placed.get(name, []) if p.stmt is st]
                if not placed or not self._on_path(placed[0].template, path):
                    raise _placement_error(
                        producer,
                        f"'{name}' reads '{producer.name}' too, but its values exist only "
                        f"inside the loops of '{consumer.name}'; compute it at root, inline "
                        f"it, or compute '{name}' inside that loop too",
                    )
                readers.extend(placed)
        return readers

    def _on_path(self, template: list, path: list) -> bool:
        """Does `template` run inside the loops of `path`? The step loops of one scan's stages
        are one loop (`scan_placement`)."""
        if len(template) < len(path):
            return False
        for mine, theirs in zip(template, path):
            if mine == theirs:
                continue
            steps = self.step_loops.get(mine[1]) if mine[0] == "dim" else None
            if steps is None or theirs[0] != "dim" or self.step_loops.get(theirs[1]) != steps:
                return False
        return True

    def _constant(self, extent: isl.PwAff) -> int | None:
        return largest_value(extent, self.params.context)

    def _param_bound(self, extent: isl.PwAff) -> isl.PwAff:
        """The largest value of `extent` over the prefix, as a function of the sizes; 0 for
        sizes where the prefix is empty (a scan's steps when the init gives them all)."""
        values = isl.Map.from_pw_aff(extent).range()
        bound = values.intersect_params(self.params.context).lexmax().dim_max(0)
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(bound.get_domain_space()))
        return bound.union_max(zero)

    def _pad(self) -> None:
        """Give every statement a schedule of one width. Loops bound to threadIdx.* move to the
        end, one dimension per tag: that is how a GPU block runs (every thread executes each
        statement in program order, in lockstep), and it keeps the bounds of every other loop
        independent of the thread index, so barriers can sit anywhere outside thread loops.
        Virtual threads go just outside them: they interleave, statement by statement, inside
        one thread (TE's virtual-thread injection)."""
        everything = [p for group in self.placed.values() for p in group]
        width = max(len(p.template) for p in everything)
        split = {}
        for p in everything:
            padded = p.template + [("beta", 0)] * (width - len(p.template))
            split[id(p)] = self._thread_split(p, padded)
        used = [t for t in THREAD_TAGS if any(t in split[id(p)][2] for p in everything)]
        main_width = max(len(split[id(p)][0]) for p in everything)
        n_virtual = max(len(split[id(p)][3]) for p in everything)
        layouts = []
        for p in everything:
            entries, outs, threads, virtual = split[id(p)]
            pad = main_width - len(entries)
            entries = entries + [("beta", 0)] * pad
            outs = outs + ["0"] * pad
            for entry, out in virtual + [(("beta", 0), "0")] * (n_virtual - len(virtual)):
                entries.append(entry)
                outs.append(out)
            for tag in used:
                entry, out = threads.get(tag, (("beta", 0), "0"))
                entries.append(entry)
                outs.append(out)
            layouts.append((entries, outs))
        # A dimension that is the same constant for every statement orders nothing; dropping
        # it makes isl's AST generation several times faster.
        width = len(layouts[0][0])
        kinds = [{_kind(entries[d]) for entries, _ in layouts} for d in range(width)]
        keep = [d for d in range(width) if len(kinds[d]) > 1 or "dim" in kinds[d]]
        for p, (entries, outs) in zip(everything, layouts):
            entries = [entries[d] for d in keep]
            outs = [outs[d] for d in keep]
            p.template = entries
            n = p.loops.dim(isl.dim_type.out)
            vs = [f"v{k}" for k in range(n)]
            to_sched = isl.Map(f"{{ [{', '.join(vs)}] -> [{', '.join(outs)}] }}")
            p.sched = p.loops.apply_range(to_sched).intersect_domain(p.domain)

    def _check_block_order(self, p: Placed) -> None:
        """Blocks are outside threads, one loop per block index: a block loop inside a thread
        loop or another block loop of its tag (around one statement) has no launch."""
        inner_of: Axis | None = None
        blocks: dict[str, Axis] = {}
        for kind, value in p.template:
            tag = self._tag(value) if kind == "dim" else None
            if tag is None:
                continue
            if tag == "vthread" and self.extents[value.stage].get(value) == 1:
                continue  # one virtual thread: no loop at all (TE's, anywhere)
            if not tag.startswith("blockIdx"):
                inner_of = inner_of or value
                continue
            if tag in blocks:
                inner_of = blocks[tag]
            blocks[tag] = value
            if inner_of is not None:
                record = self.schedule.record_for(rec.Bind, value)
                raise BindError(
                    message(
                        value.stage,
                        f"bind({value.name}, {tag})",
                        record.loc,
                        f"loop '{value.name}' is bound to {tag} but runs inside loop "
                        f"'{inner_of.name}' of '{inner_of.stage}', bound to "
                        f"{self._tag(inner_of)}; block loops must be outside thread loops, "
                        "and a grid has one loop per block index: reorder or unbind them",
                    )
                )

    def _thread_split(self, p: Placed, template: list):
        """(other entries, their isl outputs, {tag: (entry, output)}, [(entry, output)] of
        virtual threads) of a template."""
        self._check_block_order(p)
        entries, outs, threads, virtual = [], [], {}, []
        k = 0
        for kind, value in template:
            if kind == "beta":
                entries.append((kind, value))
                outs.append(str(value))
                continue
            out = f"v{k}"
            k += 1
            tag = self._tag(value)
            if tag == "vthread":
                virtual.append(((kind, value), out))
                continue
            if tag not in THREAD_TAGS:
                entries.append((kind, value))
                outs.append(out)
                continue
            if tag in threads and tag not in p.shared_tags:
                raise InternalError(f"{p.stmt.name} has two loops bound to {tag}")
            threads[tag] = ((kind, value), out)
        n = p.loops.dim(isl.dim_type.out)
        if k != n:
            raise InternalError(f"template of {p.stmt.name} has {k} loops, its map {n}")
        return entries, outs, threads, virtual

    def all(self) -> list[Placed]:
        return [p for group in self.placed.values() for p in group]


def _corner(needed: isl.Map, bmin: list[isl.PwAff]) -> isl.PwMultiAff:
    """The box's lower corner as a function of the loops around it; a 0-d tensor (the cache
    of a scalar parameter) has one element and a corner of no coordinates."""
    if not bmin:
        return isl.PwMultiAff.from_map(isl.Map.from_domain(needed.domain()))
    corner = isl.PwMultiAff.from_pw_aff(bmin[0])
    for pa in bmin[1:]:
        corner = corner.flat_range_product(isl.PwMultiAff.from_pw_aff(pa))
    return corner
