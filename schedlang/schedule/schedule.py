"""The schedule of a whole algorithm: one stage per op, and the records applied, in order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..errors import InternalError, ScheduleError, entry_point, located, user_location
from ..ir.expr import Read
from ..ir.extern import ExternOp
from ..ir.graph import post_order, together
from ..ir.hybrid.nodes import HybridOp
from ..ir.scan import ScanOp
from ..ir.tensor import ComputeOp, IterVar, Operation, Tensor
from . import records as rec
from .axis import Axis, ThreadAxis
from .group import Group, create_group
from .layout import TransformLayout
from .rewire import reads_of
from .stage import HARDWARE_TAGS, Stage


class Schedule:
    """Stages for every op the outputs depend on. ``s[T]`` is the stage of tensor (or op) `T`."""

    def __init__(self, outputs: Iterable[Operation]) -> None:
        self.roots: tuple[Operation, ...] = tuple(outputs)  # as created: what replay starts from
        # The current ops of the outputs; every output of a multi-output compute is one.
        self.output_ops: tuple[Operation, ...] = tuple(
            dict.fromkeys(op for root in self.roots for op in together(root))
        )
        self.records: list[object] = []
        # The ops cache_read, cache_write and rfactor made, in order; while `replay` applies
        # the records, those the schedule replayed made, which the same primitives give back
        # (see `made`), and None otherwise.
        self._made: list[Operation] = []
        self._replaying: tuple[Operation, ...] | None = None
        self.stages: list[Stage] = []
        self.groups: list[Group] = []  # create_group's, in the order made
        self.scan_groups: dict[str, Group] = {}  # each scan's body (`group.scan_groups`)
        self._by_op: dict[Operation, Stage] = {}
        self._by_name: dict[str, Stage] = {}
        # Stages a primitive took out (the reductions online fuses), by name: `undo` gives the
        # user's objects of them back when it brings the stages back.
        self._retired: dict[str, Stage] = {}
        for op in post_order(self.output_ops):
            group = together(op)
            if op is not group[0]:  # computed by the stage of the first output
                continue
            base = op.outputs.name if len(group) > 1 else op.name
            name, suffix = base, 1
            while name in self._by_name:
                name = f"{base}_{suffix}"
                suffix += 1
            stage = Stage(self, op, name)
            stage.ops = group
            self.stages.append(stage)
            self._by_op.update(dict.fromkeys(group, stage))
            self._by_name[name] = stage

    @entry_point
    def __getitem__(self, key: object) -> Stage:
        if isinstance(key, Read) and not key.indices:  # a scalar parameter: its 0-d input
            key = key.tensor
        if isinstance(key, Tensor):
            key = key.op
        if isinstance(key, Stage) and self.holds(key):
            return key
        if isinstance(key, str) and key in self._by_name:
            return self._by_name[key]
        if isinstance(key, Operation) and key in self._by_op:
            return self._by_op[key]
        name = getattr(key, "name", key)
        raise ScheduleError(
            f"'{name}' is not part of this schedule; its stages are "
            f"{', '.join(s.name for s in self.stages)}"
        )

    @property
    def outputs(self) -> list[Operation]:
        """The output ops as given to `create_schedule` (TE's ``s.outputs``); ``s[op]`` finds
        their stages also after cache_write gave them new ops."""
        return list(self.roots)

    # -- memory and reductions ------------------------------------------------------------

    @entry_point
    def cache_read(self, tensor: object, scope: str, readers: object) -> Tensor:
        """A stage copying `tensor` into `scope`, read by `readers` instead of `tensor`.

        ``AA = s.cache_read(A, "shared", [C])``, then ``s[AA].compute_at(s[C], ko)`` stages the
        part of ``A`` that one iteration of ``ko`` needs (TE's recipe for shared tiles).
        """
        from .cache import cache_read

        return cache_read(self, tensor, scope, readers, user_location())

    @entry_point
    def cache_write(self, tensor: object, scope: str) -> Tensor | list[Tensor]:
        """A stage computing `tensor`'s values in `scope`; `tensor` becomes a copy of it.

        Call it before scheduling `tensor`: the reduction (and its axes) moves to the cache
        (after splits and reorders, the cache is laid out by those loops). Given all the
        outputs of a multi-output compute (a list), one cache stage computes them together,
        and one cache tensor per output is returned.
        """
        from .cache import cache_write

        return cache_write(self, tensor, scope, user_location())

    @entry_point
    def create_group(self, outputs: object, inputs: object, include_inputs: bool = False) -> Group:
        """The stages computing `outputs` from `inputs` (not included unless
        `include_inputs`), to be placed together: ``g.compute_at(s[C], x)`` computes them all
        at ``x``, keeping those computed inside one another where they are."""
        return create_group(self, outputs, inputs, include_inputs)

    @entry_point
    def rfactor(self, tensor: object, axis: object, factor_axis: int = 0) -> Tensor:
        """Factor reduce loop `axis` of `tensor` out into a new stage of partial results."""
        from .rfactor import rfactor

        return rfactor(self, tensor, axis, factor_axis, user_location())

    @entry_point
    def online(
        self, tensors: object, factor: object, keep: object = (), threshold: object = None
    ) -> list[Tensor]:
        """Fuse a maximum and the sums taken against it (``[M, Z, O]`` of a softmax or of
        attention) into one pass over blocks of `factor` of their axis, with running state
        rescaled as the maximum grows; the states of the scan it makes (see `online`). The
        stages between the maximum and the sums are folded into the sums, but those in
        `keep`, computed one block at a time in the scan's steps (a product's operand). With
        `threshold`, the sums are taken against a reference that follows the maximum only
        once it has grown past it by more than `threshold` in the exponent: the states are
        rescaled rarely (FlashAttention 4), and caught up once at the end."""
        from .online import online

        return online(self, tensors, factor, user_location(), keep, threshold)

    def keep_reachable_stages(self) -> None:
        """Order the stages as the dataflow graph from the outputs does now, and take out
        those it no longer reaches (a primitive that rewrote the graph left them unread)."""
        position = {op: k for k, op in enumerate(post_order(list(self.output_ops)))}
        kept = [st for st in self.stages if any(op in position for op in st.ops)]
        for stage in self.stages:
            if stage not in kept:
                self._retired[stage.name] = stage
                self._by_name.pop(stage.name, None)
                for op in [o for o, st in self._by_op.items() if st is stage]:
                    del self._by_op[op]
        kept.sort(key=lambda st: min(position[op] for op in st.ops if op in position))
        self.stages = kept

    def record_for(self, cls: type, axis: Axis | None = None, stage: str | None = None):
        """The latest record of primitive `cls` on `axis` (or on `stage`): where an error
        found at lowering points the user."""
        for r in reversed(self.records):
            if not isinstance(r, cls):
                continue
            if (axis is None or getattr(r, "axis", None) == axis) and (
                stage is None or r.stage == stage
            ):
                return r
        raise InternalError(f"no {cls.__name__} record for {axis or stage}")

    def unique_name(self, name: str, suffix: str = "") -> str:
        """`name`, or `name_k`, such that no stage is named it followed by `suffix` (a stage of
        several outputs is named by its first: ``T.global.v0``)."""
        candidate, k = name, 1
        while candidate + suffix in self._by_name:
            candidate = f"{name}_{k}"
            k += 1
        return candidate

    def holds(self, stage: Stage) -> bool:
        """Whether `stage` is one of this schedule's stages now (`undo` takes out those that
        the primitives it takes back added)."""
        return stage.schedule is self and self._by_name.get(stage.name) is stage

    def made(self, op: Operation) -> Operation:
        """`op`, just made by a primitive that rewrites the dataflow graph; in a replay, the
        op the same primitive made in the schedule replayed instead. Ops compare by identity,
        so this is what keeps the tensors and IterVars a user holds (the cache a cache_read
        returned, a reader's op) naming the same stages and loops after `undo` and in a
        `copy`."""
        k = len(self._made)
        if self._replaying is not None and k < len(self._replaying):
            earlier = self._replaying[k]
            if type(earlier) is not type(op) or earlier.name != op.name:
                raise InternalError(
                    f"replay made op '{op.name}' where the schedule replayed made '{earlier.name}'"
                )
            op = earlier
        self._made.append(op)
        return op

    def add_stage(self, op: Operation, after: Stage | None = None, before: Stage | None = None):
        """A new stage for `op`, placed right after `after` or right before `before`."""
        stage = Stage(self, op, op.name)
        position = self.stages.index(after) + 1 if after is not None else self.stages.index(before)
        self.stages.insert(position, stage)
        self._by_op[op] = stage
        self._by_name[stage.name] = stage
        return stage

    def replace_op(self, stage: Stage, op: Operation, keep_loops: bool) -> None:
        """Give `stage` the op `op` (the old op keeps finding the stage). With `keep_loops` the
        op has the same axes, so the stage's loops stay; otherwise they start afresh."""
        old = stage.op
        if not keep_loops:
            stage._adopt(op)
        self._swap(stage, old, op)

    def _swap(self, stage: Stage, old: Operation, op: Operation) -> None:
        """`op` takes the place of `old`, one of the ops of `stage`, and the ops reading
        `old` are rewired to read `op` (which gives them new ops in turn)."""
        stage.ops = tuple(op if o is old else o for o in stage.ops)
        stage.op = stage.ops[0]
        self._by_op[op] = stage
        self.output_ops = tuple(op if o is old else o for o in self.output_ops)
        for consumer in self.stages:
            for c in consumer.ops:
                body = getattr(c, "expr", None)
                if body is not None and old in [t.op for t in c.input_tensors]:
                    self._swap(consumer, c, self.made(replace(c, expr=reads_of(old, body, op))))

    def _owner_of_itervar(self, iv: IterVar) -> str | None:
        for stage in self.stages:
            if iv in stage._by_itervar:
                return stage.name
        return None

    def _attach_chain(self, stage: Stage) -> list[str]:
        """Names of the stages `stage` is (transitively) computed inside."""
        chain = []
        while isinstance(stage.attach, rec.ComputeAt):
            stage = self._by_name[stage.attach.target]
            chain.append(stage.name)
        return chain

    def copy(self) -> Schedule:
        """An independent schedule with the same records; the tensors and axes the user
        holds, those a cache_read, cache_write or rfactor returned included, index it too."""
        return replay(self.roots, self.records, self._made)

    def normalize(self) -> Schedule:
        """This schedule (TE's ``s.normalize()``): TE rebases loops whose range does not start
        at 0 so that they do; schedlang lowers every loop from 0 already (an axis over
        ``[1, n)`` runs ``range(0, n - 1)`` and its uses read ``k + 1``), so there is nothing
        to rebase."""
        return self

    @entry_point
    def undo(self, steps: int = 1) -> None:
        """Take back the last `steps` primitives, in place: the schedule becomes exactly the
        one it was before them (the same records, at the same source lines, and the same loop
        nest). The stages, tensors and axes the user holds name the same stages and loops as
        before them, also those made by a cache_read, cache_write or rfactor that stays;
        those the removed primitives made are gone. A primitive applied again after the undo
        gives what it gave the first time."""
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise ScheduleError(f"undo(steps): steps is a positive integer, not {steps!r}")
        if steps > len(self.records):
            raise ScheduleError(
                f"undo({steps}): the schedule has {len(self.records)} primitive(s) to take back"
            )
        kept = replay(self.roots, self.records[:-steps], self._made)
        held = {**self._retired, **{stage.name: stage for stage in self.stages}}
        for stage in kept.stages:  # the user's Stage objects keep working
            if stage.name in held:
                held[stage.name].__dict__.update(stage.__dict__)
        self.__dict__.update(kept.__dict__)
        mine = {stage: held.get(stage.name, stage) for stage in kept.stages}
        self.stages = list(mine.values())
        # Every op that ever was a stage's (a reader's op before a cache_read rewired it is
        # the user's tensor) keeps finding it, as in the schedule replayed.
        self._by_op = {op: mine[stage] for op, stage in kept._by_op.items()}
        self._by_name = {stage.name: stage for stage in self.stages}
        for stage in self.stages:
            stage.schedule = self

    def taken_back(self, error: ScheduleError) -> ScheduleError:
        """`error`, raised while lowering, with how to take its primitive back (`undo`)
        where its message names one of this schedule's primitives by its source line."""
        text = str(error)
        for k in range(len(self.records) - 1, -1, -1):
            loc = self.records[k].loc
            if loc and f" at {loc}:" in text:
                steps = len(self.records) - k
                back = "s.undo() takes this primitive back"
                if steps > 1:
                    back = (
                        f"s.undo({steps}) takes this primitive back, with the {steps - 1} after it"
                    )
                error.args = (f"{text}\n({back})",)
                break
        return error

    def describe(self) -> str:
        """The schedule as Python that replays it (``s`` and the tensors by name in scope)."""
        from .text import schedule_text

        return schedule_text(self)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        outputs = ", ".join(op.name for op in self.output_ops)
        return f"<Schedule of {outputs}: {len(self.records)} primitives>"

    def _repr_html_(self) -> str:
        from .html import schedule_html

        return schedule_html(self)


@entry_point
def create_schedule(outputs: object) -> Schedule:
    """A schedule with every stage computed at root, in its natural loop order."""
    items = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    ops = []
    for item in items:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, Operation):
            raise ScheduleError(f"create_schedule takes tensors or ops, not {item!r}")
        ops.append(op)
    if not ops:
        raise ScheduleError("create_schedule: no outputs given; pass the tensors to compute")
    if not any(isinstance(op, (ComputeOp, ExternOp, HybridOp, ScanOp)) for op in ops):
        names = ", ".join(f"'{op.name}'" for op in ops)
        raise ScheduleError(
            f"create_schedule: every output ({names}) is a placeholder, so the schedule would "
            "compute nothing; pass the tensors made by sl.compute"
        )
    return Schedule(ops)


@entry_point
def thread_axis(tag: str = "vthread", name: str = "") -> ThreadAxis:
    """A hardware index to `bind` a loop to."""
    if tag not in HARDWARE_TAGS:
        raise ScheduleError(f"unknown thread tag {tag!r}; use one of {', '.join(HARDWARE_TAGS)}")
    return ThreadAxis(tag)


def replay(
    outputs: Iterable[Operation], records: Iterable[object], made: Iterable[Operation] = ()
) -> Schedule:
    """A new schedule of `outputs` with `records` applied in order; `made`, the ops the
    schedule replayed made (`Schedule.made`), are made again by the same primitives."""
    s = Schedule(outputs)
    s._replaying = tuple(made)
    for r in records:
        apply_record(s, r)
    s._replaying = None  # primitives applied from now on make new ops
    return s


def apply_record(s: Schedule, r: object) -> None:
    """Apply one record to `s`, as the primitive that made it did, at the user's line."""
    with located(r.loc):
        _apply(s, r)


def _apply(s: Schedule, r: object) -> None:
    stage = s[r.stage]
    if isinstance(r, rec.Split):
        stage.split(r.parent, factor=r.factor, nparts=r.nparts)
    elif isinstance(r, rec.Fuse):
        stage.fuse(*r.axes)
    elif isinstance(r, rec.Reorder):
        stage.reorder(*r.order)
    elif isinstance(r, rec.Annotate):
        getattr(stage, r.kind)(r.axis)
    elif isinstance(r, rec.AutoUnroll):
        stage.pragma(r.axis, "auto_unroll_max_step", r.max_step)
    elif isinstance(r, rec.ImportLlvm):
        stage.pragma(r.axis, "import_llvm", r.code)
    elif isinstance(r, rec.Pragma):
        stage.pragma(r.axis, r.name, r.value)
    elif isinstance(r, rec.Bind):
        stage.bind(r.axis, r.tag)
    elif isinstance(r, rec.ComputeAt):
        stage.compute_at(s[r.target], r.axis)
    elif isinstance(r, rec.ComputeInline):
        stage.compute_inline()
    elif isinstance(r, rec.ComputeRoot):
        stage.compute_root()
    elif isinstance(r, rec.CacheRead):
        s.cache_read(stage, r.scope, [s[name] for name in r.readers])
    elif isinstance(r, rec.CacheWrite):
        s.cache_write(stage, r.scope)
    elif isinstance(r, rec.RFactor):
        s.rfactor(stage, r.axis, r.factor_axis)
    elif isinstance(r, rec.Online):
        s.online(
            [s[name] for name in r.stages], r.factor, [s[name] for name in r.keep], r.threshold
        )
    elif isinstance(r, rec.DoubleBuffer):
        stage.double_buffer()
    elif isinstance(r, rec.Pipeline):
        stage.pipeline(r.stages, tma=r.tma, warp_specialize=r.warp_specialize)
    elif isinstance(r, rec.Swizzle):
        stage.swizzle(r.bytes)
    elif isinstance(r, rec.SetScope):
        stage.set_scope(r.scope)
    elif isinstance(r, rec.StorageAlign):
        stage.storage_align(r.axis, r.factor, r.offset)
    elif isinstance(r, rec.Tensorize):
        stage.tensorize(r.axis, r.intrin)
    elif isinstance(r, rec.StorePredicate):
        stage.set_store_predicate(r.predicate)
    elif isinstance(r, TransformLayout):
        stage.transform_layout(lambda *index: list(r.indices(index)))


__all__ = ["Axis", "Schedule", "apply_record", "create_schedule", "replay", "thread_axis"]
