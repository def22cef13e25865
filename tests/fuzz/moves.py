"""Random schedules: every primitive, on random stages and loops, with arguments that are
sometimes wrong on purpose (factors that do not divide or are not positive, compute_at at a
loop of a stage that does not read the producer, axes of another stage).

A primitive that raises must raise a `ScheduleError` that names it and leave the schedule as
it was, so drawing goes on after a rejected primitive: the schedules that reach lowering are
the ones a user gets after fixing a mistake in a notebook. After a primitive that applied,
`undo` now and then takes it back (alone, then applies it again; or with some before it, and
drawing goes on): what a notebook user does on second thoughts.

A few recipes draw what random moves seldom reach: TE's shared-memory GEMM, the int4 example's
GEMM (packed bytes in shared memory, the weight dequantised in registers), an online pass over
the algorithm's own chain of reductions, and a scan's body stage computed at its step loop with
the steps, or the loops inside them, run at the same time.
A schedule function returns whether the schedule it drew must be refused (steps at the same
time read each other through the body stage).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

import schedlang as sl
from examples import gpu_gemm_int4
from schedlang.ir.expr import Const, Expr, Reduce
from schedlang.ir.scan import ScanOp, body_ops
from schedlang.ir.tensor import ComputeOp
from schedlang.schedule import records as rec

from .verdict import FuzzFailure, Tally, check_primitive_error

SCOPES = ("global", "shared", "local")
FACTORS = (1, 2, 3, 4, 5, 7, 8, 16)
THRESHOLDS = (None, None, None, 0.0, 2.0, 8.0, -1.0, 40.0)  # online: the last two refused
CPU_KINDS = ("unroll", "vectorize", "parallel")
GPU_TAGS = ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y", "vthread")
THREADS = (1, 2, 4, 8, 32)


class Scheduler:
    """Draws primitives for schedule `s` of a case; `gpu` adds binds and makes sure every
    stage computed at the root is bound to blocks and threads, as a kernel needs."""

    def __init__(self, data, s: sl.Schedule, tally: Tally, gpu: bool) -> None:
        self.data = data
        self.s = s
        self.tally = tally
        self.gpu = gpu
        self.undo_several = True  # off while a recipe applies primitives with axes it holds

    # -- drawing --------------------------------------------------------------------------

    def draw(self, strategy, label: str | None = None):
        return self.data.draw(strategy, label=label)

    def stages(self) -> list[sl.Stage]:
        return [x for x in self.s.stages if isinstance(x.op, ComputeOp)]

    def stage(self) -> sl.Stage:
        return self.draw(st.sampled_from(self.stages()))

    def leaf(self, stage: sl.Stage, free: bool = False):
        leaves = [
            x
            for x in stage.leaves
            if not free or (x not in stage.annotations and x not in stage.binds)
        ]
        if not leaves or self.draw(st.integers(0, 30)) == 0:
            other = self.stage()  # now and then an axis of another stage: an AxisError
            leaves = other.leaves or leaves
        return self.draw(st.sampled_from(leaves)) if leaves else None

    def factor(self) -> int:
        if self.draw(st.integers(0, 40)) == 0:
            return self.draw(st.sampled_from([0, -2]))
        return self.draw(st.sampled_from(FACTORS))

    def attempt(self, name: str, call) -> object:
        """Apply one primitive; a ScheduleError must name it and change nothing. Now and then
        the primitive is taken back by `undo` (with some before it), then applied again or
        not (see `undo`)."""
        before = (len(self.s.records), self.s.describe())
        kept = list(self.s.records)
        try:
            result = call()
        except sl.ScheduleError as err:
            check_primitive_error(err, name, self.s, before)
            self.tally.count(f"primitive rejected: {type(err).__name__}")
            return None
        self.tally.count(f"primitive: {name}")
        if self.draw(st.integers(0, 5), label="undo") == 0:
            self.undo(name, call, kept)
        return result

    def undo(self, name: str, call, kept: list) -> None:
        """Take back the primitive `call` just applied, and perhaps some before it: the
        records must be those before them, at the same lines. Taken back alone, it is applied
        again and must give the records it gave the first time (the stages, tensors and axes
        it used still name the same ones); taken back with others, drawing goes on from the
        schedule left, whose axes the later primitives may miss (a refusal that names them)."""
        applied = list(self.s.records)
        added = len(applied) - len(kept)
        if added == 0:
            return
        most = len(applied) if self.undo_several else added
        steps = self.draw(st.integers(added, most), label="undo steps")
        self.s.undo(steps)
        if self.s.records != applied[: len(applied) - steps]:
            raise FuzzFailure(f"undo({steps}) after {name} left other records:\n{self.s}")
        if steps > added:
            self.tally.count("undo: several primitives")
            return
        try:
            call()
        except sl.ScheduleError as err:
            raise FuzzFailure(f"{name} applied again after undo() was refused: {err}") from err
        if _unlocated(self.s.records) != _unlocated(applied):  # called from another line
            raise FuzzFailure(f"{name} applied again after undo() gave other records:\n{self.s}")
        self.tally.count("undo: applied again")

    # -- the primitives -------------------------------------------------------------------

    def split(self, stage: sl.Stage) -> None:
        leaf = self.leaf(stage)
        factor = self.factor()  # drawn once: `undo` applies the same split again
        if self.draw(st.booleans()):
            self.attempt("split", lambda: stage.split(leaf, factor=factor))
        else:
            self.attempt("split", lambda: stage.split(leaf, nparts=factor))

    def tile(self, stage: sl.Stage) -> None:
        x, y = self.leaf(stage), self.leaf(stage)
        fx, fy = self.factor(), self.factor()
        self.attempt("tile", lambda: stage.tile(x, y, fx, fy))

    def fuse(self, stage: sl.Stage) -> None:
        if len(stage.leaves) < 2:
            return
        # two loops, or three: tiles fused that way are made by the code generator
        width = self.draw(st.integers(2, min(3, len(stage.leaves))))
        k = self.draw(st.integers(0, len(stage.leaves) - width))
        axes = stage.leaves[k : k + width]
        if self.draw(st.integers(0, 5)) == 0:
            axes = [self.leaf(stage), self.leaf(stage)]  # not adjacent, or twice: an error
        self.attempt("fuse", lambda: stage.fuse(*axes))

    def reorder(self, stage: sl.Stage) -> None:
        if not stage.leaves:
            return
        order = self.draw(st.permutations(stage.leaves))
        keep = self.draw(st.integers(1, len(order)))
        self.attempt("reorder", lambda: stage.reorder(*order[:keep]))

    def annotate(self, stage: sl.Stage) -> None:
        leaf = self.leaf(stage, free=True)
        kind = self.draw(st.sampled_from(CPU_KINDS[:2] if self.gpu else CPU_KINDS))
        self.attempt(kind, lambda: getattr(stage, kind)(leaf))

    def unroll_nest(self, stage: sl.Stage) -> None:
        """Unroll every free loop of the stage: nested unrolls multiply into as many copies as
        the loops' extents, past what a build may unroll, so the refusal gets drawn too."""
        for leaf in [x for x in stage.leaves if x not in stage.annotations | stage.binds]:
            self.attempt("unroll", lambda x=leaf: stage.unroll(x))

    def bind(self, stage: sl.Stage) -> None:
        leaf = self.leaf(stage, free=True)
        tag = self.draw(st.sampled_from(GPU_TAGS))
        self.attempt("bind", lambda: stage.bind(leaf, sl.thread_axis(tag)))

    def compute_at(self, stage: sl.Stage) -> None:
        target = self.stage()
        leaf = self.leaf(target)
        self.attempt("compute_at", lambda: stage.compute_at(target, leaf))

    def compute_inline(self, stage: sl.Stage) -> None:
        self.attempt("compute_inline", stage.compute_inline)

    def compute_root(self, stage: sl.Stage) -> None:
        self.attempt("compute_root", stage.compute_root)

    def cache_read(self, stage: sl.Stage) -> None:
        """A cache of `stage`'s tensor or of an input, for some of the stages that read it."""
        sources = [x for x in self.s.stages if self._readers(x)]
        if not sources:
            return
        source = self.draw(st.sampled_from(sources))
        readers = self._readers(source)
        chosen = self.draw(st.lists(st.sampled_from(readers), min_size=1, unique=True))
        if self.draw(st.integers(0, 20)) == 0:
            chosen = [self.stage()]  # perhaps a stage that does not read it
        scope = self.draw(st.sampled_from(SCOPES))
        self.attempt("cache_read", lambda: self.s.cache_read(source, scope, chosen))

    def _readers(self, source: sl.Stage) -> list[sl.Stage]:
        return [x for x in self.stages() if source.op in [t.op for t in x.op.input_tensors]]

    def cache_write(self, stage: sl.Stage) -> None:
        scope = self.draw(st.sampled_from(SCOPES))
        self.attempt("cache_write", lambda: self.s.cache_write(stage, scope))

    def set_scope(self, stage: sl.Stage) -> None:
        scope = self.draw(st.sampled_from(SCOPES))
        self.attempt("set_scope", lambda: stage.set_scope(scope))

    def storage_align(self, stage: sl.Stage) -> None:
        if not stage.op.axis:
            return
        axis = self.draw(st.sampled_from(stage.op.axis))
        factor = self.draw(st.sampled_from([1, 2, 4, 8, 32]))
        offset = self.draw(st.integers(0, factor))  # factor itself is out of range
        self.attempt("storage_align", lambda: stage.storage_align(axis, factor, offset))

    def double_buffer(self, stage: sl.Stage) -> None:
        self.attempt("double_buffer", stage.double_buffer)

    def pipeline(self, stage: sl.Stage) -> None:
        """Asynchronous copies `stages` - 1 steps ahead: right only for a shared tile refilled
        in a loop of its consumer, so most draws are refusals that must name pipeline."""
        stages = self.draw(st.integers(2, 4))
        self.attempt("pipeline", lambda: stage.pipeline(stages))

    def buffering(self, stage: sl.Stage) -> None:
        """Nothing, double buffering, or a pipeline of 2 to 4 stages, as a tuned GEMM draws."""
        choice = self.draw(st.sampled_from(["none", "double_buffer", "pipeline"]))
        if choice != "none":
            getattr(self, choice)(stage)

    def rfactor(self, stage: sl.Stage) -> None:
        reduce_leaves = [x for x in stage.leaves if x.kind == "reduce"]
        if not reduce_leaves:
            return
        leaf = self.draw(st.sampled_from(reduce_leaves))
        factor_axis = self.draw(st.integers(0, len(stage.op.axis)))
        self.attempt("rfactor", lambda: self.s.rfactor(stage, leaf, factor_axis))

    def online(self, stage: sl.Stage) -> None:
        """`stage` and one or two other reductions, in a drawn order, fused by online: the
        softmax's and layer norm's chains in their order are right (if still unscheduled),
        most other draws are refused by name."""
        others = [x for x in self.stages() if isinstance(x.op.expr, Reduce) and x is not stage]
        if not isinstance(stage.op.expr, Reduce) or not others:
            return
        count = self.draw(st.integers(1, min(2, len(others))), label="online chain")
        chain = [stage, *self.draw(st.permutations(others))[:count]]
        factor = self.draw(st.sampled_from((0, *FACTORS)), label="online factor")
        threshold = self.draw(st.sampled_from(THRESHOLDS), label="online threshold")
        self.attempt("online", lambda: self.s.online(chain, factor, threshold=threshold))

    def online_chain(self) -> None:
        """The algorithm's own chain first, where it has one: its first reduction and the
        reductions after it, in the order the dataflow gives, fused by online with a drawn
        factor (right for softmax and layer norm, refused by name for the others), before
        random moves schedule the stages it made."""
        reductions = [x for x in self.stages() if isinstance(x.op.expr, Reduce)]
        maxima = [k for k, x in enumerate(reductions) if x.op.expr.combiner.name == "max"]
        reductions = reductions[maxima[0] :] if maxima else reductions  # attention: not S
        if len(reductions) < 2:  # nothing drawn: other families keep their draws
            return
        if self.draw(st.integers(0, 2), label="online recipe") != 0:
            return
        factor = self.draw(st.sampled_from((0, *FACTORS)), label="online factor")
        # a stage kept a block per step: the softmax's exponentials are one it may keep; the
        # others (after the sums, or the input) are refused by name
        elementwise = [x for x in self.stages() if isinstance(getattr(x.op, "expr", None), Expr)]
        elementwise = [x for x in elementwise if not isinstance(x.op.expr, Reduce)]
        keep = []
        if elementwise and self.draw(st.booleans(), label="online keep"):
            keep = [self.draw(st.sampled_from(elementwise), label="kept stage")]
        names = [x.name for x in reductions]
        # a lagging reference maximum now and then: legal for softmax chains below the float32
        # bound; refused by name past it, below zero, and for mean and variance chains
        threshold = self.draw(st.sampled_from(THRESHOLDS), label="online threshold")
        states = self.attempt(
            "online", lambda: self.s.online(reductions, factor, keep=keep, threshold=threshold)
        )
        if states and self.draw(st.booleans(), label="scan at rows"):
            self.scan_at_rows(states[0], names[1:])

    def scan_at_rows(self, state: sl.Tensor, finals: list[str]) -> None:
        """The online scan computed per block of a drawn number of the output's rows, the
        sums' last rows inlined into their readers: where the chain is masked, each block runs
        only the steps that change its rows (`poly.scan_live`)."""
        out = self.s[self.s.output_ops[0]]
        factor = self.draw(st.sampled_from(FACTORS), label="rows a scan")
        split = self.attempt("split", lambda: out.split(out.op.axis[0], factor=factor))
        for name in finals:
            if split is None or not self._holds(state):  # an undo took the scan back
                return
            if self._holds(name):
                self.attempt("compute_inline", lambda name=name: self.s[name].compute_inline())
        if not self._holds(state):
            return
        self.attempt("compute_at", lambda: self.s[state].compute_at(out, split[0]))
        if self._holds(state) and isinstance(self.s[state].attach, rec.ComputeAt):
            self.tally.count("online scan at rows")

    def _holds(self, key) -> bool:
        try:
            self.s[key]
        except sl.ScheduleError:
            return False
        return True

    # -- whole schedules ------------------------------------------------------------------

    def random_moves(self, count: int) -> None:
        loops = ["split", "split", "tile", "fuse", "reorder", "annotate", "unroll_nest"]
        placement = ["compute_at", "compute_at", "compute_inline", "compute_root"]
        memory = ["cache_read", "cache_write", "set_scope", "storage_align"]
        memory += ["double_buffer", "pipeline"]  # buffering of a shared tile, either way
        moves = loops + placement + memory + ["rfactor", "online"]
        moves += ["bind", "bind"] if self.gpu else []
        for _ in range(count):
            name = self.draw(st.sampled_from(moves), label="primitive")
            getattr(self, name)(self.stage())

    def shared_gemm(self) -> None:
        """TE's GPU GEMM recipe (tests/schedule/test_gpu_schedules.gemm_shared_local) with
        drawn tiles, where the output is a matmul: per k step, shared tiles of A and B filled
        by every thread of the block (element by element, or in vectors of 2 or 4 floats, the
        8 and 16 bytes cp.async moves), then buffered as drawn. Random moves seldom make a
        shared tile refilled in a loop, which is where double_buffer and pipeline act."""
        outs = self.s.output_ops
        out = outs[0]
        if len(outs) != 1 or not isinstance(out, ComputeOp) or len(out.axis) != 2:
            return
        if len(out.reduce_axis) != 1 or len(out.input_tensors) != 2:
            return
        a, b = out.input_tensors
        tile = self.draw(st.sampled_from([2, 4, 8]), label="gemm tile")
        threads = self.draw(st.sampled_from([1, 2, 4]), label="gemm threads")
        k_step = self.draw(st.sampled_from([1, 2, 3, 4, 8]), label="gemm k step")
        vector = self.draw(st.sampled_from([1, 2, 4]), label="gemm copy vector")
        s, c = self.s, out.output(0)
        self.undo_several = False  # the recipe goes on with the axes it made
        caches = [s.cache_read(t, "shared", [c]) for t in (a, b)]
        local = s.cache_write(c, "local")
        by, yi = s[c].split(c.op.axis[0], factor=tile)
        bx, xi = s[c].split(c.op.axis[1], factor=tile)
        ty, yi = s[c].split(yi, nparts=threads)
        tx, xi = s[c].split(xi, nparts=threads)
        s[c].reorder(by, bx, ty, tx, yi, xi)
        for axis, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x")):
            s[c].bind(axis, sl.thread_axis(tag))
        for axis, tag in ((ty, "threadIdx.y"), (tx, "threadIdx.x")):
            s[c].bind(axis, sl.thread_axis(tag))
        s[local].compute_at(s[c], tx)
        ko, ki = s[local].split(s[local].op.reduce_axis[0], factor=k_step)
        s[local].reorder(ko, ki, *s[local].op.axis)
        for cache in caches:
            s[cache].compute_at(s[local], ko)
            rows, cols = s[cache].op.axis
            if vector > 1:  # whole rows of the tile: vectors along the columns
                cols, lanes = s[cache].split(cols, factor=vector)
                s[cache].vectorize(lanes)
            rest = s[cache].fuse(rows, cols)
            rest, fx = s[cache].split(rest, factor=threads)
            _, fy = s[cache].split(rest, factor=threads)
            s[cache].bind(fx, sl.thread_axis("threadIdx.x"))
            s[cache].bind(fy, sl.thread_axis("threadIdx.y"))
            self.buffering(s[cache])
        self.undo_several = True
        self.tally.count("shared gemm recipe")

    def int4_gemm(self) -> None:
        """`examples/gpu_gemm_int4.py`'s GPU schedule with drawn tiles, where the algorithm is
        the int4 family's GEMM with its weight a stage: per k step, A's tile and the packed
        tile of Wq (bytes) staged in shared memory, the sum in registers, and the weight
        dequantised in registers at each k of the step."""
        out = self.s.output_ops[0]
        inputs = {t.name: t for t in out.input_tensors}
        if "acc" not in inputs:
            return
        acc = inputs["acc"]
        inputs.update((t.name, t) for t in acc.op.input_tensors)
        if "W" not in inputs:
            return
        w = inputs["W"]
        wq = next(t for t in w.op.input_tensors if t.name == "Wq")
        draw = self.draw
        rows, cols = (
            draw(st.sampled_from([2, 4]), label="int4 block"),
            draw(st.sampled_from([4, 8])),
        )
        threads_y, threads_x = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 4]))
        step = draw(st.sampled_from([1, 2, 4]), label="int4 k step")
        self.undo_several = False  # the recipe goes on with the axes it made
        options = dict(block_rows=rows, block_cols=cols, threads_y=threads_y)
        options.update(threads_x=threads_x, step=step, copy_bytes=None)
        gpu_gemm_int4.apply_schedule(self.s, inputs["A"], wq, out.output(0), **options)
        self.undo_several = True
        self.tally.count("int4 gemm recipe")

    def scan_body(self) -> tuple[ScanOp, list[sl.Stage]] | None:
        """The schedule's scan and its body stages but the update, where it has them."""
        scans = [x.op for x in self.s.stages if isinstance(x.op, ScanOp)]
        if len(scans) != 1:
            return None
        update = scans[0].update.op
        body = [self.s[op] for op in body_ops([update], {scans[0].state.op}) if op is not update]
        return (scans[0], body) if body else None

    def scan_steps(self, scan: ScanOp, body: list[sl.Stage]) -> bool:
        """The body stages computed at the update's step loop, then either the steps run at
        the same time (parallel or vectorized, or bound to blocks or threads on the GPU),
        which must be refused wherever two steps follow the init's rows (one reading the
        other), or the loops inside them (the columns). Returns whether the schedule must be
        refused."""
        update = self.s[scan.update]
        t, i = update.op.axis
        for stage in body:
            stage.compute_at(update, t)
        steps = self.draw(st.booleans(), label="scan steps at the same time")
        if self.gpu and steps:
            update.bind(t, sl.thread_axis(self.draw(st.sampled_from(GPU_TAGS[:3]))))
        elif self.gpu:
            for stage in [*body, update]:
                threads = self.draw(st.sampled_from(THREADS))
                outer, inner = stage.split(stage.op.axis[1], factor=threads)
                stage.bind(outer, sl.thread_axis("blockIdx.x"))
                stage.bind(inner, sl.thread_axis("threadIdx.x"))
        else:
            kind = self.draw(st.sampled_from(CPU_KINDS[1:]))
            getattr(update, kind)(t if steps else i)
        self.tally.count(f"scan recipe: {'steps' if steps else 'columns'} at the same time")
        extent, rows = scan.shape[0], scan.init.shape[0]
        known = isinstance(extent, Const) and isinstance(rows, Const)
        return steps and not (known and extent.value - rows.value < 2)  # else none to wait

    def bind_roots(self) -> None:
        """Bind each stage computed at the root, and not bound yet, to blocks and threads:
        its outermost data loop split by a number of threads, the outer part to blockIdx.x."""
        for stage in self.stages():
            at_root = stage.attach is None or isinstance(stage.attach, rec.ComputeRoot)
            data_leaves = [x for x in stage.leaves if x.kind == "data"]
            if not at_root or stage.binds or not data_leaves:
                continue
            leaf = data_leaves[0]
            threads = self.draw(st.sampled_from(THREADS))
            split = self.attempt("split", lambda s=stage, x=leaf, t=threads: s.split(x, factor=t))
            if split is None:
                continue
            outer, inner = split
            self.attempt("bind", lambda s=stage, x=outer: s.bind(x, sl.thread_axis("blockIdx.x")))
            self.attempt("bind", lambda s=stage, x=inner: s.bind(x, sl.thread_axis("threadIdx.x")))


def _unlocated(records: list) -> list:
    return [replace(r, loc="") for r in records]


def cpu_schedule(data, s: sl.Schedule, tally: Tally) -> bool:
    """Now and then the scan recipe, else up to a dozen primitives of every kind but bind.
    Returns whether the schedule must be refused."""
    scheduler = Scheduler(data, s, tally, gpu=False)
    scan = scheduler.scan_body()
    if scan is not None and data.draw(st.integers(0, 2), label="scan recipe") == 0:
        return scheduler.scan_steps(*scan)
    scheduler.online_chain()
    scheduler.random_moves(data.draw(st.integers(0, 12)))
    return False


def gpu_schedule(data, s: sl.Schedule, tally: Tally) -> bool:
    """Now and then the scan recipe and the stages left at the root bound, else now and then
    TE's shared-memory GEMM recipe first (where the algorithm is a matmul; the int4 example's
    where it is the int4 family's GEMM), then random primitives (binds included), then the
    stages left at the root bound to blocks and threads. Returns whether the schedule must
    be refused."""
    scheduler = Scheduler(data, s, tally, gpu=True)
    scan = scheduler.scan_body()
    if scan is not None and data.draw(st.integers(0, 2), label="scan recipe") == 0:
        refused = scheduler.scan_steps(*scan)
        scheduler.bind_roots()
        return refused
    if data.draw(st.integers(0, 3), label="shared gemm recipe") == 0:
        scheduler.shared_gemm()
        scheduler.int4_gemm()
    else:
        scheduler.online_chain()
    scheduler.random_moves(data.draw(st.integers(0, 12)))
    scheduler.bind_roots()
    return False
