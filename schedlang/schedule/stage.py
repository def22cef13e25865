"""A stage: the schedule of one op. Loop primitives check their arguments and append records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import entry_point, user_location
from ..ir.expr import Const, Var, as_expr
from ..ir.extern import ExternOp
from ..ir.hybrid.nodes import HybridOp
from ..ir.integers import as_int
from ..ir.scan import ScanOp
from ..ir.tensor import ComputeOp, IterVar, Operation, PlaceholderOp
from ..ir.visit import walk
from . import records as rec
from . import stage_guards as guards
from .axis import Axis, ThreadAxis
from .errors import (
    AnnotationError,
    AxisError,
    BindError,
    FactorError,
    LegalityError,
    PlacementError,
    ScopeError,
    TensorizeError,
    message,
)
from .intrin import TensorIntrin
from .introspect import StageViews
from .layout import TransformLayout, layout_of
from .pragma import apply_pragma
from .stage_guards import (
    check_scope,
    depends_on,
    keep_in_scan,
    one_output,
    scan_stages,
    step_mates,
)
from .user_intrin import UserIntrin

if TYPE_CHECKING:
    from .schedule import Schedule

HARDWARE_TAGS = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
    "vthread",
)


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


class Stage(StageViews):
    """The loops of one op and where it is computed. Obtain with ``s[tensor]``."""

    def __init__(self, schedule: Schedule, op: Operation, name: str) -> None:
        self.schedule = schedule
        self.name = name
        self.scope: str | None = None  # None: "global", or inferred from where it is computed
        self.align: dict[int, tuple[int, int]] = {}  # buffer dimension -> (factor, offset)
        self.double_buffered = False
        self.pipeline_stages: int | None = None
        self.pipeline_tma = False
        self.pipeline_warp_specialize = True
        self.swizzle_bytes = 0
        self.tensorized: rec.Tensorize | None = None
        self.attach: rec.ComputeAt | rec.ComputeInline | rec.ComputeRoot | None = None
        self.store_predicate: rec.StorePredicate | None = None
        self.layout: TransformLayout | None = None  # transform_layout's
        # pragma auto_unroll_max_step: the scope's loop -> (steps, where it was asked)
        self.auto_unroll: dict[Axis, tuple[int, str]] = {}
        self.imports: list[str] = []  # pragma import_llvm: LLVM IR linked into the kernel
        self.pragmas: dict[Axis, list[tuple[str, object]]] = {}  # kept only (`pragma`)
        self.origin_op = op  # the op the stage was made for (cache_write, rfactor replace `op`)
        self._adopt(op)

    def _adopt(self, op: Operation) -> None:
        """Make `op` this stage's op, with fresh loops. cache_write and rfactor give a stage a
        new op; the IterVars the user holds keep naming the same loops where the op keeps them."""
        self.op = op
        # Every op the stage computes: `op` first, then the other outputs of a multi-output
        # compute, which share its axes and loops.
        self.ops: tuple[Operation, ...] = (op,)
        roots: list[tuple[IterVar, Axis]] = []
        if isinstance(op, (ComputeOp, HybridOp)):
            taken: set[str] = set()
            for iv in op.axis + op.reduce_axis:
                axis_name = iv.var.name
                while axis_name in taken:
                    axis_name += "_"
                taken.add(axis_name)
                roots.append((iv, Axis(self.name, axis_name, iv.kind)))
        self.root_axes: tuple[Axis, ...] = tuple(ax for _, ax in roots)
        self.itervars: dict[Axis, IterVar] = {ax: iv for iv, ax in roots}
        self._by_itervar = {iv: ax for iv, ax in roots}
        self.leaves: list[Axis] = list(self.root_axes)
        self.extents: dict[Axis, int | None] = {
            ax: (int(iv.dom.extent.value) if isinstance(iv.dom.extent, Const) else None)
            for iv, ax in roots
        }
        self.relations: list[rec.Split | rec.Fuse] = []
        self.annotations: dict[Axis, str] = {}
        self.binds: dict[Axis, str] = {}
        if getattr(op, "intrin_call", None) is not None:
            self._run_intrinsic(op.intrin_call)

    def _run_intrinsic(self, call) -> None:
        """A compute calling a tensor intrinsic (`ir.intrin_call`) runs it on its inner loops:
        those are tensorized with it from the start, after the loops of the call's reduce
        axes (each of whose steps resets or updates the tile, as the intrinsic declares)."""
        n_data, n_tile = len(self.op.axis), len(call.op.axis)
        data, reduce = self.root_axes[:n_data], self.root_axes[n_data:]
        outer_reduce = len(call.reduce_axis)
        self.leaves = [
            *data[: n_data - n_tile],
            *reduce[:outer_reduce],
            *data[n_data - n_tile :],
            *reduce[outer_reduce:],
        ]
        self.tensorized = rec.Tensorize(self.name, data[n_data - n_tile], call.intrin)

    @property
    def scheduled(self) -> bool:
        """True once a loop primitive or a placement was applied to the stage."""
        return bool(
            self.relations
            or self.annotations
            or self.binds
            or self.leaves != list(self.root_axes)
            or self.attach is not None
            or self.tensorized is not None
        )

    def __repr__(self) -> str:
        return f"Stage({self.name})"

    # -- helpers -------------------------------------------------------------------------

    def _fail(self, cls: type, call: str, loc: str, what: str) -> None:
        raise cls(message(self.name, call, loc, what))

    def _axis(self, axis: object, call: str, loc: str) -> Axis:
        """The current leaf loop that `axis` (an IterVar of this op or an Axis) names."""
        if isinstance(axis, IterVar):
            found = self._by_itervar.get(axis)
            if found is None:
                owner = self.schedule._owner_of_itervar(axis)
                where = f"of stage '{owner}'" if owner else "of no stage of this schedule"
                self._fail(
                    AxisError,
                    call,
                    loc,
                    f"axis '{axis.name}' is an axis {where}, not of '{self.name}'; "
                    f"use s[{self.name}].op.axis / .reduce_axis or axes returned by its split",
                )
            axis = found
        if not isinstance(axis, Axis):
            self._fail(AxisError, call, loc, f"{axis!r} is not an axis")
        if axis.stage != self.name:
            self._fail(
                AxisError,
                call,
                loc,
                f"axis '{axis.name}' belongs to stage '{axis.stage}', not '{self.name}'",
            )
        if axis not in self.leaves:
            by = next(
                (r for r in self.relations if axis in (getattr(r, "axes", ()) or (r.parent,))),
                None,
            )
            if isinstance(by, rec.Split):
                fate = f"was already split into '{by.outer.name}' and '{by.inner.name}'"
            elif isinstance(by, rec.Fuse):
                fate = f"was already fused into '{by.fused.name}'"
            else:
                fate = "is not a loop of this stage"
            self._fail(AxisError, call, loc, f"axis '{axis.name}' {fate}; use the new axes")
        return axis

    def _require_compute(self, call: str, loc: str) -> None:
        guards.check_live(self, call, loc)
        if isinstance(self.op, ScanOp):
            what = (
                f"'{self.name}' is a scan: it has no loops of its own, its rows are computed by "
                "the stages of its init and update; schedule those (compute_at, compute_root "
                "and set_scope place the whole scan)"
            )
            self._fail(PlacementError, call, loc, what)
        self._require_placeable(call, loc)

    def _require_loops(self, call: str, loc: str) -> None:
        """A compute's loops, or a hybrid script's (the loops it is written with)."""
        if isinstance(self.op, HybridOp):
            guards.check_live(self, call, loc)
        else:
            self._require_compute(call, loc)

    def _require_placeable(self, call: str, loc: str) -> None:
        """A compute, or a scan: the placement primitives move a scan with all its stages."""
        guards.check_live(self, call, loc)
        if isinstance(self.op, ScanOp):
            return
        if isinstance(self.op, ExternOp):
            what = (
                f"'{self.name}' is an extern stage (computed whole by {self.op.call.func!r}, "
                "before the kernel): it has no loops to schedule"
            )
            self._fail(PlacementError, call, loc, what)
        if isinstance(self.op, HybridOp):
            what = (
                f"'{self.name}' is computed by the hybrid script '{self.op.call.name}', whole, "
                "as a function of its own: its loops are scheduled (split, fuse, reorder, "
                "parallel, ...) but the stage is not placed, cached or tensorized"
            )
            self._fail(PlacementError, call, loc, what)
        if not isinstance(self.op, ComputeOp):
            self._fail(
                PlacementError,
                call,
                loc,
                f"'{self.name}' is a placeholder (an input): it has no loops to schedule",
            )

    def _keep_in_scan(self, call: str, loc: str, cls: type = PlacementError) -> None:
        keep_in_scan(self, call, loc, cls)

    def _one_output(self, cls: type, call: str, loc: str) -> None:
        one_output(self, cls, call, loc)

    def _record(self, record: object) -> None:
        self.schedule.records.append(record)

    # -- loop primitives -----------------------------------------------------------------

    @entry_point
    def split(self, parent: object, factor: object = None, nparts: object = None):
        """Split `parent` into ``(outer, inner)`` with ``parent = outer * factor + inner``.

        Before/after, for ``split(i, factor=4)`` with ``i`` in [0, n)::

            for i in range(n):            for i.outer in range((n + 3) // 4):
              body(i)                       for i.inner in range(4):
                                              if i.outer * 4 + i.inner < n:
                                                body(i.outer * 4 + i.inner)
        """
        loc = user_location()
        shown = f"factor={factor}" if nparts is None else f"nparts={nparts}"
        call = f"split({getattr(parent, 'name', parent)}, {shown})"
        self._require_loops(call, loc)
        axis = self._axis(parent, call, loc)
        if (factor is None) == (nparts is None):
            self._fail(FactorError, call, loc, "give exactly one of factor= and nparts=")
        word = "factor" if nparts is None else "nparts"
        amount = self._amount(factor if nparts is None else nparts, word, call, loc)
        self._check_unannotated(axis, call, loc)
        return self._split(axis, amount, nparts is not None, loc)

    def _amount(self, amount: object, word: str, call: str, loc: str) -> int:
        value = as_int(amount)
        if value is None or value <= 0:
            shown = amount.value if isinstance(amount, Const) else amount
            shown = shown if value is None else value  # np.int64(0) shown as 0
            self._fail(FactorError, call, loc, f"{word} must be a positive integer, got {shown!r}")
        return value

    def _split(self, axis: Axis, amount: int, by_nparts: bool, loc: str) -> tuple[Axis, Axis]:
        extent = self.extents[axis]
        # A symbolic extent may become constant where the stage is computed (the box of its
        # footprint), so nparts on it is checked when the schedule is lowered.
        outer = Axis(self.name, f"{axis.name}.outer", axis.kind)
        inner = Axis(self.name, f"{axis.name}.inner", axis.kind)
        if not by_nparts:
            self.extents[outer] = None if extent is None else _ceildiv(extent, amount)
            self.extents[inner] = amount
            record = rec.Split(self.name, axis, outer, inner, amount, None, loc)
        else:
            self.extents[outer] = amount
            self.extents[inner] = None if extent is None else _ceildiv(extent, amount)
            record = rec.Split(self.name, axis, outer, inner, None, amount, loc)
        position = self.leaves.index(axis)
        self.leaves[position : position + 1] = [outer, inner]
        self.relations.append(record)
        self._record(record)
        return outer, inner

    @entry_point
    def tile(self, x_parent: object, y_parent: object, x_factor: object, y_factor: object):
        """Split two axes and order the loops ``x.outer, y.outer, x.inner, y.inner``.

        All or nothing: every argument is checked before either split is applied, so a
        mistake leaves the stage as it was (the user may catch the error and go on)."""
        loc = user_location()
        names = [getattr(a, "name", a) for a in (x_parent, y_parent)]
        call = f"tile({names[0]}, {names[1]}, {x_factor}, {y_factor})"
        self._require_loops(call, loc)
        x_axis = self._axis(x_parent, call, loc)
        y_axis = self._axis(y_parent, call, loc)
        if x_axis == y_axis:
            self._fail(AxisError, call, loc, f"'{x_axis.name}' is given twice; tile two loops")
        x_amount = self._amount(x_factor, "x_factor", call, loc)
        y_amount = self._amount(y_factor, "y_factor", call, loc)
        self._check_unannotated(x_axis, call, loc)
        self._check_unannotated(y_axis, call, loc)
        xo, xi = self._split(x_axis, x_amount, False, loc)
        yo, yi = self._split(y_axis, y_amount, False, loc)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    @entry_point
    def fuse(self, *axes: object) -> Axis:
        """Fuse adjacent loops (outer first) into one: ``fused = outer * extent(inner) + inner``.
        Of no loops, a new loop of one iteration outside all the others (TE's singleton)."""
        loc = user_location()
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        call = f"fuse({', '.join(getattr(a, 'name', str(a)) for a in axes)})"
        self._require_loops(call, loc)
        if not axes:  # TE's singleton: a loop of one iteration, outermost
            taken = sum(1 for a in self.leaves if a.name.startswith("singleton"))
            singleton = Axis(self.name, "singleton" + (f".{taken}" if taken else ""), "data")
            self.extents[singleton] = 1
            self.leaves.insert(0, singleton)
            record = rec.Fuse(self.name, (), singleton, loc)
            self.relations.append(record)
            self._record(record)
            return singleton
        resolved = [self._axis(a, call, loc) for a in axes]
        if len(resolved) == 1:
            return resolved[0]
        if len(set(resolved)) != len(resolved):
            self._fail(AxisError, call, loc, "an axis is listed twice")
        positions = [self.leaves.index(a) for a in resolved]
        if positions != list(range(positions[0], positions[0] + len(positions))):
            order = ", ".join(a.name for a in self.leaves)
            self._fail(
                AxisError,
                call,
                loc,
                f"fused axes must be adjacent loops listed outer to inner; the loop order is "
                f"({order}); reorder first",
            )
        for a in resolved:
            self._check_unannotated(a, call, loc)
        # a data loop fused with a reduce loop makes a reduce loop (TE's): the init runs the
        # data loops on their own, before it (`poly.loops.init_leaves`)
        kind = "reduce" if any(a.kind == "reduce" for a in resolved) else "data"
        fused = Axis(self.name, ".".join(a.name for a in resolved) + ".fused", kind)
        total: int | None = 1
        for a in resolved:
            total = None if total is None or self.extents[a] is None else total * self.extents[a]
        self.extents[fused] = total
        self.leaves[positions[0] : positions[-1] + 1] = [fused]
        record = rec.Fuse(self.name, tuple(resolved), fused, loc)
        self.relations.append(record)
        self._record(record)
        return fused

    @entry_point
    def reorder(self, *axes: object) -> None:
        """Put the listed loops, in this order, into the positions they occupy together."""
        loc = user_location()
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = tuple(axes[0])
        call = f"reorder({', '.join(getattr(a, 'name', str(a)) for a in axes)})"
        self._require_loops(call, loc)
        resolved = [self._axis(a, call, loc) for a in axes]
        if len(set(resolved)) != len(resolved):
            self._fail(AxisError, call, loc, "an axis is listed twice")
        slots = sorted(self.leaves.index(a) for a in resolved)
        for slot, a in zip(slots, resolved):
            self.leaves[slot] = a
        self._record(rec.Reorder(self.name, tuple(resolved), loc))

    def _check_unannotated(self, axis: Axis, call: str, loc: str) -> None:
        if axis in self.binds:
            self._fail(
                AnnotationError,
                call,
                loc,
                f"'{axis.name}' is already bound to {self.binds[axis]}; split or fuse before bind",
            )
        if axis in self.annotations:
            self._fail(
                AnnotationError,
                call,
                loc,
                f"'{axis.name}' is already {self.annotations[axis]}; "
                "split or fuse before annotating",
            )

    def _annotate(self, axis: object, kind: str) -> None:
        loc = user_location()
        call = f"{kind}({getattr(axis, 'name', axis)})"
        self._require_loops(call, loc)
        resolved = self._axis(axis, call, loc)
        word = {"unroll": "unrolled", "vectorize": "vectorized", "parallel": "parallel"}[kind]
        if resolved in self.binds:
            self._fail(
                AnnotationError,
                call,
                loc,
                f"'{resolved.name}' is bound to {self.binds[resolved]}; it cannot also be {word}",
            )
        if kind != "unroll" and resolved.kind == "reduce":
            self._fail(
                LegalityError,
                call,
                loc,
                f"'{resolved.name}' runs the reduction of '{self.name}': its iterations update the "
                f"same element, so they cannot run at the same time ({word}); keep the reduce "
                f"loop serial, or rfactor it: the factored stage's new axis can be {word}",
            )
        previous = self.annotations.get(resolved)
        if previous is not None and previous != word:
            self._fail(
                AnnotationError,
                call,
                loc,
                f"'{resolved.name}' is already {previous}; a loop has one kind",
            )
        self.annotations[resolved] = word
        self._record(rec.Annotate(self.name, resolved, kind, loc))

    @entry_point
    def unroll(self, axis: object) -> None:
        """Unroll the loop (its extent must be a constant when lowered)."""
        self._annotate(axis, "unroll")

    @entry_point
    def pragma(self, axis: object, name: str, value: object = None) -> None:
        """TE's pragmas: ``"unroll"`` and ``"vectorize"`` are those primitives;
        ``"auto_unroll_max_step"`` (an int) unrolls the loops inside `axis` whose constant
        extents multiply to at most `value`, innermost first, up to the first that does not
        fit; ``"unroll_explicit"`` is accepted with it (schedlang unrolls in its loop IR or has
        LLVM do it, the same loops either way); ``"import_llvm"`` (LLVM IR text) links the C
        functions of a declared intrinsic into the CPU kernel. On an online scan's step axis
        (GPU, warpgroup products), ``"overlap_products"`` moves a step's second products into
        the next step, beside its softmax (`loopir.gpu.overlap_products`), and ``"take_turns"``
        has a producer warpgroup's consumers take turns at the tensor cores
        (`loopir.gpu.take_turns`); on a loop whose steps rescale a register tile,
        ``"skip_unit_scales"`` runs each thread's rescale only where one of its factors is
        not 1 (`loopir.gpu.skip_unit_scales`). TVM's thread-pool and C-code
        pragmas are refused, saying why; any other name is kept on the loop, as TE keeps a
        pragma no pass of it acts on (``iter_var_attrs[axis].pragma_keys``), with a warning
        that it changes nothing."""
        apply_pragma(self, axis, name, value, user_location())

    @entry_point
    def vectorize(self, axis: object) -> None:
        """Run the loop as SIMD lanes (innermost loops; tails are guarded)."""
        self._annotate(axis, "vectorize")

    @entry_point
    def parallel(self, axis: object) -> None:
        """Run the loop's iterations on CPU threads."""
        self._annotate(axis, "parallel")

    @entry_point
    def bind(self, axis: object, thread_axis: object) -> None:
        """Make the loop a GPU hardware index (``blockIdx.x``, ``threadIdx.y``, ``vthread``...)."""
        loc = user_location()
        tag = thread_axis.tag if isinstance(thread_axis, ThreadAxis) else thread_axis
        call = f"bind({getattr(axis, 'name', axis)}, {tag})"
        self._require_loops(call, loc)
        resolved = self._axis(axis, call, loc)
        if tag not in HARDWARE_TAGS:
            self._fail(
                BindError,
                call,
                loc,
                f"unknown thread tag {tag!r}; use one of {', '.join(HARDWARE_TAGS)}",
            )
        if resolved in self.annotations:
            self._fail(
                BindError,
                call,
                loc,
                f"'{resolved.name}' is {self.annotations[resolved]}; it cannot also be bound",
            )
        if resolved in self.binds:
            self._fail(
                BindError,
                call,
                loc,
                f"'{resolved.name}' is already bound to {self.binds[resolved]}",
            )
        if tag != "vthread":
            for other, other_tag in self.binds.items():
                if other_tag == tag:
                    self._fail(
                        BindError,
                        call,
                        loc,
                        f"'{other.name}' is already bound to {tag}; two loops of one stage "
                        "cannot share a hardware index (fuse them first)",
                    )
        if resolved.kind == "reduce" and len(self.ops) > 1:
            self._fail(
                BindError,
                call,
                loc,
                f"'{resolved.name}' reduces over tuples ({len(self.ops)} outputs together); a "
                "cross-thread reduction combines one value per thread: bind the data axes, "
                "and keep the reduce loops serial",
            )
        if resolved.kind == "reduce" and guards.fuses_data(self, resolved):
            self._fail(
                BindError,
                call,
                loc,
                f"'{resolved.name}' fuses data loops with reduce loops, so its threads would "
                "update different elements: a cross-thread reduction cannot combine them; "
                "bind the data loops, and fuse only reduce loops for threads",
            )
        if resolved.kind == "reduce" and tag.startswith("blockIdx"):
            self._fail(
                BindError,
                call,
                loc,
                f"reduce axis '{resolved.name}' bound to {tag}: blocks cannot combine partial "
                "results; bind it to threadIdx.* (a cross-thread reduction) or rfactor it",
            )
        self.binds[resolved] = tag
        self._record(rec.Bind(self.name, resolved, tag, loc))

    @entry_point
    def tensorize(self, axis: object, intrin: object) -> None:
        """Run the loops from `axis` inwards as the tensor-core instruction `intrin` (one of
        `schedlang.intrin`'s), or as the calls of an intrinsic declared with
        `sl.decl_tensor_intrin` (on the CPU). Lowering proves that those loops compute what
        `intrin` does. A stage has one tensorized region: tensorizing it again (after more
        splits, say) replaces the earlier one, as in TE.

        Before (an accumulator stage ``CF``, its 16 x 16 x 16 tile innermost)::

            for ii in range(16):
              for jj in range(16):
                for kk in range(16):
                  CF[ii, jj] = CF[ii, jj] + float32(AF[ii, kk]) * float32(BF[kk, jj])

        After ``s[CF].tensorize(ii, sl.intrin.mma_sync())``::

            CF[0:+16, 0:+16] += mma_sync(AF[0:+16, 0:+16] @ BF[0:+16, 0:+16])
        """
        loc = user_location()
        call = f"tensorize({getattr(axis, 'name', axis)}, {intrin!r})"
        self._require_compute(call, loc)
        if getattr(self.op, "intrin_call", None) is not None:
            self._fail(
                TensorizeError,
                call,
                loc,
                f"'{self.name}' calls the intrinsic {self.op.intrin_call.intrin!r} in its body, "
                "and its inner loops run it already; tensorize a stage that computes the "
                "intrinsic's definition instead",
            )
        self._one_output(TensorizeError, call, loc)
        resolved = self._axis(axis, call, loc)
        if not isinstance(intrin, (TensorIntrin, UserIntrin)):
            self._fail(
                TensorizeError,
                call,
                loc,
                f"{intrin!r} is not a tensor intrinsic; use one of sl.intrin.load_matrix, "
                "mma_sync or store_matrix, or declare one with sl.decl_tensor_intrin",
            )
        inner = self.leaves[self.leaves.index(resolved) :]
        for leaf in inner:
            if leaf in self.binds or leaf in self.annotations:
                how = self.binds.get(leaf) or self.annotations[leaf]
                self._fail(
                    TensorizeError,
                    call,
                    loc,
                    f"'{leaf.name}' is {how}; the loops a tensor instruction replaces "
                    "cannot also be bound or annotated",
                )
        self.tensorized = rec.Tensorize(self.name, resolved, intrin, loc)
        self._record(self.tensorized)

    # -- placement -----------------------------------------------------------------------

    @entry_point
    def compute_at(self, parent: Stage, axis: object) -> None:
        """Compute this stage inside `parent`'s loop `axis`, over the region used there."""
        loc = user_location()
        call = f"compute_at(s[{getattr(parent, 'name', parent)}], {getattr(axis, 'name', axis)})"
        self._require_placeable(call, loc)
        self._keep_in_scan(call, loc)
        if not isinstance(parent, Stage) or not self.schedule.holds(parent):
            self._fail(
                PlacementError, call, loc, "the first argument must be a stage of this schedule"
            )
        if parent is self:
            self._fail(PlacementError, call, loc, "a stage cannot be computed inside itself")
        target_axis = parent._axis(axis, call, loc)
        if self.op in self.schedule.output_ops:
            self._fail(
                PlacementError,
                call,
                loc,
                f"'{self.name}' is an output: the caller's array holds all of it, and compute_at "
                "would keep only the part one iteration needs; leave it at the root",
            )
        if isinstance(parent.attach, rec.ComputeInline):
            self._fail(PlacementError, call, loc, f"'{parent.name}' is inlined: it has no loops")
        if isinstance(self.op, ScanOp) and parent.name in scan_stages(self):
            self._fail(
                PlacementError,
                call,
                loc,
                f"'{parent.name}' computes the steps of the scan '{self.name}'; compute the "
                "scan at a loop of a stage that reads its result",
            )
        readers = step_mates(parent) if target_axis == parent.root_axes[0] else [parent]
        if not any(depends_on(reader, self) for reader in readers):
            self._fail(
                PlacementError,
                call,
                loc,
                f"'{parent.name}' does not read '{self.name}'; compute_at needs a consumer "
                "stage (the one whose loop decides which part of this stage is needed), or, "
                "at a scan's loop over its steps, a stage of that scan's steps",
            )
        if self.name in self.schedule._attach_chain(parent):
            self._fail(
                PlacementError,
                call,
                loc,
                f"'{parent.name}' is itself computed inside '{self.name}'",
            )
        guards.warn_replaced(self, call, loc)
        self.attach = rec.ComputeAt(self.name, parent.name, target_axis, loc)
        self._record(self.attach)

    @entry_point
    def compute_inline(self) -> None:
        """Substitute this stage's expression into its consumers; it gets no loops of its own."""
        loc = user_location()
        call = "compute_inline()"
        self._require_compute(call, loc)
        self._keep_in_scan(call, loc)
        if self.op.reduce_axis:
            self._fail(
                PlacementError,
                call,
                loc,
                f"'{self.name}' is a reduction; only elementwise (injective) stages can be "
                "inlined: use compute_at or compute_root",
            )
        if self.op in self.schedule.output_ops:
            self._fail(PlacementError, call, loc, f"'{self.name}' is an output; outputs are stored")
        for other in self.schedule.stages:
            if isinstance(other.attach, rec.ComputeAt) and other.attach.target == self.name:
                self._fail(
                    PlacementError,
                    call,
                    loc,
                    f"stage '{other.name}' is computed at a loop of '{self.name}'",
                )
        guards.warn_replaced(self, call, loc)
        self.attach = rec.ComputeInline(self.name, loc)
        self._record(self.attach)

    @entry_point
    def compute_root(self) -> None:
        """Compute this stage in full, in its own loop nest, before its consumers."""
        loc = user_location()
        self._require_placeable("compute_root()", loc)
        self.attach = rec.ComputeRoot(self.name, loc)
        self._record(self.attach)

    # -- memory --------------------------------------------------------------------------

    @entry_point
    def set_scope(self, scope: str) -> None:
        """Keep this stage's buffer in ``"global"``, ``"shared"`` (per GPU block) or ``"local"``
        (per thread: registers) memory."""
        loc = user_location()
        call = f"set_scope({scope!r})"
        self._require_placeable(call, loc)
        self._keep_in_scan(call, loc)
        check_scope(self.name, call, loc, scope)
        if self.op in self.schedule.output_ops and scope != "global":  # "global": where it is
            self._fail(
                ScopeError,
                call,
                loc,
                f"'{self.name}' is an output: it lives in the global buffer passed by the caller; "
                "use s.cache_write to compute it in another scope",
            )
        self.scope = scope
        self._record(rec.SetScope(self.name, scope, loc))

    @entry_point
    def transform_layout(self, mapping) -> None:
        """Store this stage's tensor in another order: its element at ``index`` at
        ``mapping(*index)`` of its buffer, the caller's array for an input or output
        (`schedule.layout`; TE's ``transform_layout``, the loops kept in their order)."""
        loc = user_location()
        call = "transform_layout(...)"
        guards.check_live(self, call, loc)
        if not isinstance(self.op, ComputeOp) and type(self.op) is not PlaceholderOp:
            self._fail(PlacementError, call, loc, f"'{self.name}' has no buffer of its own")
        self.layout = layout_of(self, mapping, loc)
        self._record(self.layout)

    @entry_point
    def double_buffer(self) -> None:
        """Keep two copies of this stage's buffer, so the loop it is computed in fills the
        next iteration's copy while the current one is read (one barrier per iteration instead
        of two on a GPU; TE's ``double_buffer``)."""
        loc = user_location()
        call = "double_buffer()"
        self._require_compute(call, loc)
        self._keep_in_scan(call, loc)
        if self.op in self.schedule.output_ops:
            self._fail(ScopeError, call, loc, f"'{self.name}' is an output: it is not staged")
        if self.pipeline_stages is not None:
            self._fail(ScopeError, call, loc, f"'{self.name}' is already pipelined")
        self.double_buffered = True
        self._record(rec.DoubleBuffer(self.name, loc))

    @entry_point
    def pipeline(self, stages: int = 3, tma: bool = False, warp_specialize: bool = True) -> None:
        """Fill this stage's buffer (a shared tile refilled in a loop of its consumer) with
        asynchronous copies (``cp.async``), `stages` - 1 iterations of that loop ahead of
        their use, in `stages` copies of the buffer: the copies of the next tiles are in
        flight while the current one is used (Triton's ``num_stages``). ``stages=2`` is
        ``double_buffer`` without the registers.

        Before (a tile of A refilled per step of k)::

            for k.outer in range(0, 8):
              barrier()
              A.shared[...] = A[..., 32 * k.outer + ...]
              barrier()
              ... A.shared[...] ...

        After ``s[A.shared].pipeline(stages=3)``::

            A.shared[0, ...] = async_copy(A[..., 0 + ...]); async_commit()
            A.shared[1, ...] = async_copy(A[..., 32 + ...]); async_commit()
            for k.outer in range(0, 8):
              async_wait(pending=1)
              barrier()
              if k.outer + 2 < 8:
                A.shared[(k.outer + 2) % 3, ...] = async_copy(A[..., 32 * (k.outer + 2) + ...])
              async_commit()
              ... A.shared[k.outer % 3, ...] ...

        With ``tma=True`` (Hopper, ``sm_90a``) the copy engine (TMA) fills each stage's whole
        box in one bulk copy, zero-filling what lies outside the tensor. The copies are issued
        by a producer thread in a warp of its own, added to the block after its other threads
        (along the outermost ``threadIdx`` it uses), and their completion is counted on a
        memory barrier per stage (``full``); the threads that read a stage release it on
        another (``empty``), so no block barrier stands in the loop and the producer runs up
        to `stages` - 1 steps ahead (warp specialisation: CUTLASS's producer and consumer
        warps, Triton's ``warp_specialize``)::

            for k.outer in range(0, 8):
              if k.outer + 2 < 8:   # the producer thread
                mbarrier_wait(A.shared.empty[(k.outer + 2) % 3], ...)   # from k.outer >= 1
                mbarrier_arrive(A.shared.full[(k.outer + 2) % 3], expect_bytes=...)
                A.shared[(k.outer + 2) % 3, 0, 0] = bulk_copy(A[..., 32 * (k.outer + 2)], box ...)
              mbarrier_wait(A.shared.full[k.outer % 3], parity=k.outer // 3 % 2)  # the others
              ... A.shared[k.outer % 3, ...] ...
              mbarrier_arrive(A.shared.empty[k.outer % 3])

        With ``tma=True, warp_specialize=False`` the block keeps its threads: its first thread
        issues the copies at the start of each step, between its own work, and every thread
        releases a stage at the end of the step that read it, once its products are done. The
        issuing thread then waits only for the block's other threads to finish the step
        before, so its warps run at most a step ahead of them: warpgroups drift apart, one's
        softmax or epilogue beside another's products, with no block barrier in the loop and
        no registers given to a producer warp (CUTLASS's non-specialised TMA kernels)::

            for k.outer in range(0, 8):
              if k.outer + 2 < 8:   # the block's first thread
                mbarrier_wait(A.shared.empty[(k.outer + 2) % 3], ...)   # from k.outer >= 1
                mbarrier_arrive(A.shared.full[(k.outer + 2) % 3], expect_bytes=...)
                A.shared[(k.outer + 2) % 3, 0, 0] = bulk_copy(A[..., 32 * (k.outer + 2)], box ...)
              mbarrier_wait(A.shared.full[k.outer % 3], parity=k.outer // 3 % 2)  # every thread
              ... A.shared[k.outer % 3, ...] ...
              mbarrier_arrive(A.shared.empty[k.outer % 3])

        The fill must copy a box of a tensor as it is (no padding condition, no arithmetic),
        compact or swizzled: anything else is a `LoweringError` that says what to change.
        """
        loc = user_location()
        call = rec.Pipeline(self.name, stages, loc, tma is True, warp_specialize is True).call
        self._require_compute(call, loc)
        self._keep_in_scan(call, loc)
        count = as_int(stages)
        if count is None or count < 2:
            self._fail(FactorError, call, loc, f"stages must be an integer >= 2, got {stages!r}")
        if self.op in self.schedule.output_ops:
            self._fail(ScopeError, call, loc, f"'{self.name}' is an output: it is not staged")
        if self.double_buffered:
            self._fail(
                ScopeError,
                call,
                loc,
                f"'{self.name}' is double buffered already; pipeline(stages=2) is the "
                "asynchronous form of that: use one of them",
            )
        if not isinstance(tma, bool):
            self._fail(FactorError, call, loc, f"tma must be True or False, got {tma!r}")
        if not isinstance(warp_specialize, bool):
            self._fail(
                FactorError,
                call,
                loc,
                f"warp_specialize must be True or False, got {warp_specialize!r}",
            )
        if not warp_specialize and not tma:
            self._fail(
                FactorError,
                call,
                loc,
                "warp_specialize=False chooses who issues the copy engine's copies (tma=True); "
                "asynchronous copies without it are issued by every thread already",
            )
        self.pipeline_stages = count
        self.pipeline_tma = tma
        self.pipeline_warp_specialize = warp_specialize
        self._record(rec.Pipeline(self.name, count, loc, tma, warp_specialize))

    @entry_point
    def storage_align(self, axis: object, factor: int, offset: int) -> None:
        """Pad the buffer so that the stride of `axis`'s dimension is ``factor * k + offset``
        (e.g. ``factor=32, offset=1`` on a shared tile's rows avoids bank conflicts)."""
        loc = user_location()
        call = f"storage_align({getattr(axis, 'name', axis)}, {factor}, {offset})"
        self._require_compute(call, loc)
        self._keep_in_scan(call, loc)
        resolved = self._by_itervar.get(axis) if isinstance(axis, IterVar) else axis
        if resolved not in self.root_axes:
            self._fail(
                AxisError,
                call,
                loc,
                f"storage_align takes an axis of s[{self.name}].op.axis (a dimension of "
                f"the buffer), not {getattr(axis, 'name', axis)!r}",
            )
        dim = self.root_axes.index(resolved)
        if resolved.kind != "data":
            self._fail(
                ScopeError, call, loc, f"'{resolved.name}' is a reduce axis, not a dimension"
            )
        for word, value in (("factor", factor), ("offset", offset)):
            if as_int(value) is None:
                self._fail(FactorError, call, loc, f"{word} must be an integer, got {value!r}")
        factor, offset = as_int(factor), as_int(offset)
        if factor <= 0 or not 0 <= offset < factor:
            self._fail(
                FactorError,
                call,
                loc,
                f"need factor > 0 and 0 <= offset < factor, got factor={factor}, offset={offset}",
            )
        if self.op in self.schedule.output_ops:
            self._fail(
                ScopeError,
                call,
                loc,
                f"'{self.name}' is an output: its layout is the caller's array",
            )
        if self.swizzle_bytes:
            self._fail(ScopeError, call, loc, f"'{self.name}' is swizzled: one layout or the other")
        self.align[dim] = (factor, offset)
        self._record(rec.StorageAlign(self.name, resolved, factor, offset, loc))

    @entry_point
    def set_store_predicate(self, predicate: object) -> None:
        """Store this stage's values only where `predicate` holds (TE's name): a bool
        expression of hardware indices (``sl.thread_axis("threadIdx.x").var``, read as the
        loop bound to that index around each store) and sizes. After a reduction across
        threads every thread holds the result, and ``threadIdx.x == 0`` lets one write it."""
        loc = user_location()
        call = "set_store_predicate(...)"
        self._require_compute(call, loc)
        cond = as_expr(predicate)
        if cond.dtype != "bool":
            self._fail(AnnotationError, call, loc, f"the predicate is {cond.dtype}, not bool")
        others = sorted(
            {v.name for v in walk(cond) if isinstance(v, Var) and v.kind not in ("thread", "size")}
        )
        if others:
            self._fail(
                AnnotationError,
                call,
                loc,
                f"the predicate reads {', '.join(others)}; it may read hardware indices "
                "(sl.thread_axis(tag).var) and sizes only",
            )
        if self.store_predicate is not None:
            if str(self.store_predicate.predicate) == str(cond):
                return  # the same again (TOPI's schedules say it of a stage in two roles)
            self._fail(AnnotationError, call, loc, "the stage has a store predicate already")
        self.store_predicate = rec.StorePredicate(self.name, cond, loc)
        self._record(self.store_predicate)

    @entry_point
    def swizzle(self, bytes: int = 128) -> None:
        """Lay this stage's shared buffer out swizzled: in each 128-byte line, the 16-byte
        chunks are permuted by the line's index (XOR, as the tensor cores and the copy engine
        read shared memory), so that 8 rows read at one column (``ldmatrix``, a column of a
        tile) fall in 8 different groups of banks, with no padding. `bytes` is 128, 64 or 32
        (how many of the line's bits permute). Accesses of 16 bytes or less that are aligned
        to their size stay whole; wider vectors are split.

        A tile of 8 rows x 64 halves (128-byte rows), ``swizzle(128)``: row ``r``'s chunk
        ``c`` (halves ``8c .. 8c + 7``) is stored at chunk ``c ^ r`` of its line."""
        loc = user_location()
        call = f"swizzle({bytes!r})"
        self._require_compute(call, loc)
        self._keep_in_scan(call, loc)
        if as_int(bytes) not in (32, 64, 128):
            self._fail(FactorError, call, loc, f"bytes must be 32, 64 or 128, got {bytes!r}")
        if self.op in self.schedule.output_ops:
            self._fail(
                ScopeError, call, loc, f"'{self.name}' is an output: its layout is the caller's"
            )
        if self.align:
            self._fail(
                ScopeError, call, loc, f"'{self.name}' has storage_align: one layout or the other"
            )
        self.swizzle_bytes = as_int(bytes)
        self._record(rec.Swizzle(self.name, self.swizzle_bytes, loc))
