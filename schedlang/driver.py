"""`sl.lower`: the lowering pipeline, one named pass after another.

Set ``SCHEDLANG_DUMP=1`` to print what each pass produces.
"""

from __future__ import annotations

import os
from dataclasses import replace

from .collector import paused
from .errors import LoweringError, ScheduleError
from .ir.expr import Const, Read, Var, const
from .ir.tensor import Operation, PlaceholderOp, Tensor
from .loopir.core.nodes import Buffer, LoweredFunc, ScanRows, Stmt
from .loopir.core.printer import constant_bytes
from .loopir.from_isl import generate, param_expr
from .loopir.gpu.accumulate_in_place import accumulate_in_place
from .loopir.gpu.epilogue_in_place import epilogue_in_place
from .loopir.gpu.fragment_lanes import lower_fragment_elements
from .loopir.gpu.overlap_products import overlap_products
from .loopir.gpu.rotate_parity import rotate_parity
from .loopir.gpu.skip_unit_scales import skip_unit_scales
from .loopir.gpu.thread_reduce import lower_thread_reductions
from .loopir.index.divmod import simplify_divisions
from .loopir.index.index_type import index_dtype
from .loopir.index.layouts import apply_layouts
from .loopir.index.overflow import may_overflow
from .loopir.loops.full_steps import split_full_steps
from .loopir.loops.gist_guards import gist_guards
from .loopir.loops.single_steps import peel_single_steps
from .loopir.loops.unroll import unroll_loops
from .loopir.loops.unroll_limit import check_unroll_size
from .loopir.loops.vector_inner import sink_vector_loops
from .loopir.memory.allocate import insert_allocations
from .loopir.memory.barriers import insert_barriers
from .loopir.memory.bulk_pipeline import bulk_pipeline
from .loopir.memory.double_buffer import double_buffer
from .loopir.memory.pipeline import pipeline
from .loopir.memory.registers import left_to_llvm
from .loopir.memory.store_predicates import predicate_stores
from .poly.bounds import check_bounds
from .poly.legality import check_legality
from .poly.local_reads import check_local_reads
from .poly.placement import Placement
from .poly.scans import Scan, aliases, find_scans, first_step, rows_to_check
from .poly.space import Params
from .poly.statements import build_statements, inline_bodies
from .poly.stored import check_storable
from .poly.tensorize import plan_tensorize, restrict_to_tiles
from .runtime.interrupt import interruptible
from .schedule import records as rec
from .schedule.errors import ScopeError, message
from .schedule.pragma import OVERLAP_PRODUCTS, SKIP_UNIT_SCALES, TAKE_TURNS
from .schedule.schedule import Schedule


def _dump(name: str, value: object) -> None:
    """Print a pass's result under SCHEDLANG_DUMP. A callable `value` is called only then:
    printing isl objects costs time, and islpy keeps the strings it makes."""
    if os.environ.get("SCHEDLANG_DUMP"):
        shown = value() if callable(value) else value
        print(f"== {name} ==\n{shown}\n")


def lower(s: Schedule, args: list[Tensor], name: str = "main", draft: bool = False) -> LoweredFunc:
    """The loop nest of schedule `s`, as a function of the buffers of `args` (in order). A
    `draft` is for reading only: a fragment stage not yet tensorized shows as plain loops (as
    TE prints it before ``tensorize``), which no build accepts."""
    with paused(), interruptible():
        try:
            return _lower(s, list(args), name, draft=draft)
        except ScheduleError as error:
            s.taken_back(error)
            raise


def lower_for_gpu(s: Schedule, args: list[Tensor], name: str = "main") -> LoweredFunc:
    """As `lower`, but loops marked unrolled stay loops: the GPU passes unroll those whose
    variables index registers, and LLVM the others (`registers.left_to_llvm`), so that no
    pass in between walks copies it has no use for."""
    with paused(), interruptible():
        try:
            return _lower(s, list(args), name, keep=left_to_llvm)
        except ScheduleError as error:
            s.taken_back(error)
            raise


def _lower(
    s: Schedule, args: list[Tensor], name: str, keep=None, draft: bool = False
) -> LoweredFunc:
    params = Params([op for stage in s.stages for op in stage.ops])
    scans = find_scans(s)
    params.aliases = aliases(scans)
    scan_rows = tuple(_scan_rows(scan) for scan in rows_to_check(scans, params))
    bodies = inline_bodies(s)
    statements = build_statements(s, bodies, params, first_step(scans))
    _dump("statements", lambda: "\n".join(f"{t.name} {t.role}: {t.domain}" for t in statements))
    check_bounds(statements, params)
    arg_ops = _arg_ops(s, args)
    check_storable(s, frozenset(arg_ops), scans)
    placement = Placement(s, statements, params, frozenset(arg_ops))
    _dump("schedule", lambda: "\n".join(f"{p.stmt.name}: {p.sched}" for p in placement.all()))
    cross_thread = check_legality(s, placement, params, scans)
    check_local_reads(s, placement, params)
    plans = plan_tensorize(s, placement, params, draft)
    restrict_to_tiles(placement, plans)
    buffers, params_bufs, local = _buffers(s, arg_ops, placement, params)
    layouts = {buffers[op]: _layout(s, op) for op in buffers if _layout(s, op) is not None}
    stepped = frozenset(
        buffers[op]
        for stage in s.stages
        if stage.name in placement.stepped
        for op in stage.ops
        if op in buffers
    )
    sizes = tuple(params.vars.values())
    index = index_dtype([op for stage in s.stages for op in stage.ops], sizes, buffers.values())

    def loop_nest(index: str) -> Stmt:
        body, reductions = generate(
            s,
            placement.all(),
            placement.extents,
            cross_thread,
            params.context,
            params.vars,
            buffers,
            index,
            plans,
        )
        _dump("generated", body)
        body = apply_layouts(body, layouts)
        if not draft:  # a draft shows fragments' element loops as written
            body = accumulate_in_place(lower_fragment_elements(body, reductions))
            body = epilogue_in_place(body)
        body = lower_thread_reductions(body, reductions)
        body = predicate_stores(body, _store_predicates(s, buffers))
        body = insert_allocations(body, local, stepped)
        body = double_buffer(body, _doubled(s, buffers))
        piped = _pipelined(s, buffers)
        body = pipeline(body, {b: n for b, (n, tma, _) in piped.items() if not tma})
        body = bulk_pipeline(body, {b: (n, ws) for b, (n, tma, ws) in piped.items() if tma})
        body = insert_barriers(body)
        body = split_full_steps(body)
        body = peel_single_steps(body)
        body = gist_guards(body)
        if not draft:
            body = overlap_products(body, _pragma_loops(s, OVERLAP_PRODUCTS))
            body = rotate_parity(body)
            body = skip_unit_scales(body, _pragma_loops(s, SKIP_UNIT_SCALES))
        body = sink_vector_loops(body)
        folded: dict = {}  # expressions simplified, for the next simplification to reuse
        check_unroll_size(s, body)  # before any pass makes the copies
        body = unroll_loops(body, folded, keep)  # simplified, sharing `folded`
        body = simplify_divisions(body)
        _dump("simplified", body)
        return body

    body = loop_nest(index)
    if index == "int32" and may_overflow(body):  # values that fit, arithmetic that does not
        index = "int64"
        body = loop_nest(index)
    imports = tuple(code for stage in s.stages for code in stage.imports)
    turns = tuple(_pragma_loops(s, TAKE_TURNS).items())
    return LoweredFunc(name, tuple(params_bufs), sizes, body, index, imports, scan_rows, turns)


def _pragma_loops(s: Schedule, pragma: str) -> dict[str, str]:
    """The loops `pragma` is given on: the axis's name, and the stage's, for a refusal."""
    return {
        axis.var.name: stage.name
        for stage in s.stages
        for axis, pragmas in stage.pragmas.items()
        if any(name == pragma for name, _ in pragmas)
    }


def _scan_rows(scan: Scan) -> ScanRows:
    first = scan.ops[0]
    return ScanRows(first.scan_name, first.init.name, first.state.name, scan.rows, first.shape[0])


def _not_a_stage(s: Schedule, a: object, op: object) -> str:
    """Why argument `a` has no stage, and what to do."""
    name = getattr(op, "name", None)
    if name in s._retired:
        return (
            f"argument '{name}' was taken out of the schedule by a primitive that rewrote the "
            f"dataflow (online folds the stages between a maximum and its sums into the sums); "
            f"leave it out of args, or keep it with online(..., keep=[{name}])"
        )
    return (
        f"argument {a!r} is not a tensor of this schedule; pass the tensors of the algorithm "
        "the schedule was created for (a placeholder, or a compute it reads or is)"
    )


def _arg_ops(s: Schedule, args: list[Tensor]) -> list[Operation]:
    """The ops of `args`, each once: two parameters for one tensor would be two arrays that
    the kernel writes and reads as one."""
    arg_ops: list[Operation] = []
    for position, a in enumerate(args):
        if isinstance(a, Read) and not a.indices:  # a scalar parameter: its 0-d input
            a = a.tensor
        if isinstance(a, Var):
            raise LoweringError(
                f"argument '{a.name}' is a size (an sl.var), not a tensor: a kernel reads its "
                f"sizes off the shapes of its arrays, so leave it out of args (and pass it by "
                f"name, kernel(..., {a.name}=value), where no array shows it)"
            )
        op = a.op if isinstance(a, Tensor) else a
        if not isinstance(op, Operation) or op not in s._by_op:
            raise LoweringError(_not_a_stage(s, a, op))
        op = s._by_op[op].ops[getattr(op, "value_index", 0)]  # its current op
        if op in arg_ops:
            raise LoweringError(
                f"'{op.name}' is listed twice in args (positions {arg_ops.index(op)} and "
                f"{position}); list each tensor once"
            )
        arg_ops.append(op)
    return arg_ops


def _buffers(s: Schedule, arg_ops: list[Operation], placement: Placement, params: Params):
    buffers: dict[Operation, Buffer] = {}
    names = _Names()
    for op in arg_ops:
        if op in params.aliases:
            raise LoweringError(
                f"'{op.name}' is part of a scan (its rows are the scan's); list the scan's "
                "tensor in args instead"
            )
        buffers[op] = Buffer(names.fresh(op.name), _stored_shape(s, op), op.dtype, "global")
    local = []
    for stage, op in [(each, op) for each in s.stages for op in each.ops]:
        if op in buffers or op in params.aliases:
            continue
        if isinstance(op, PlaceholderOp):
            if _is_read(op, placement) and not op.shape:
                raise LoweringError(
                    f"the algorithm reads the scalar parameter '{op.name}', which is not in "
                    "args; list it in args where calls pass its value"
                )
            if _is_read(op, placement):
                raise LoweringError(
                    f"the algorithm reads the placeholder '{op.name}', which is not in args; "
                    "list every input and output tensor in args"
                )
            continue
        if isinstance(stage.attach, rec.ComputeInline):
            if stage.layout is not None:
                raise LoweringError(
                    f"'{stage.name}' is stored in another layout (transform_layout) but inlined, "
                    "so it has no buffer; drop one of the two"
                )
            continue
        if op in s.output_ops:
            raise LoweringError(f"the output '{op.name}' is not in args; add it")
        storage = placement.storage.get(op)
        leads: tuple = ()
        if storage is None:
            shape = _stored_shape(s, op)
        elif stage.layout is not None:
            raise LoweringError(
                f"'{stage.name}' is stored in another layout (transform_layout) and computed "
                "inside another stage's loops, where its buffer holds a part of it; compute it "
                "at the root"
            )
        else:
            box = (_extent(c, pa, params) for c, pa in zip(storage.constant, storage.extents))
            leads = tuple(const(n, "int32") for n in storage.leads)
            shape = leads + tuple(box)
        buffer = Buffer(
            names.fresh(stage.name if len(stage.ops) == 1 else op.name),
            shape,
            op.dtype,
            placement.scope(stage),
            _strides({d + len(leads): a for d, a in stage.align.items()}, shape),
        )
        if stage.swizzle_bytes:
            buffer = replace(buffer, swizzle=_swizzle(s, stage, buffer))
        buffers[op] = buffer
        if op is not stage.ops[0] and local and local[-1][0] is buffers.get(stage.ops[0]):
            local[-1] += (buffer,)  # the outputs of one stage are allocated together
        else:
            local.append((buffer,))
    for op, scan_op in params.aliases.items():
        buffers[op] = buffers[scan_op]  # a scan's rows are written and read in place
    return buffers, [buffers[op] for op in arg_ops], local


def _layout(s: Schedule, op: Operation):
    stage = s._by_op.get(op)
    return None if stage is None else stage.layout


def _stored_shape(s: Schedule, op: Operation) -> tuple:
    """The shape of `op`'s buffer: its own, or the one ``transform_layout`` gave it."""
    layout = _layout(s, op)
    return tuple(op.shape) if layout is None else layout.shape


class _Names:
    """Buffer names, each given once: two tensors may share a name (two placeholders "A"), and
    the loop nest, the kernel's messages and its parameters name them A and A_1, as loop
    variables are named."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def fresh(self, name: str) -> str:
        found, k = name, 0
        while found in self._taken:
            k += 1
            found = f"{name}_{k}"
        self._taken.add(found)
        return found


def _store_predicates(s: Schedule, buffers: dict) -> dict[Buffer, rec.StorePredicate]:
    return {
        buffers[op]: t.store_predicate
        for t in s.stages
        if t.store_predicate is not None
        for op in t.ops
    }


def _doubled(s: Schedule, buffers: dict) -> list[Buffer]:
    """The buffers of the stages that asked for double_buffer(), which must be refilled in a
    loop of their consumer."""
    found = []
    for stage in s.stages:
        if stage.double_buffered:
            _check_refilled(s, stage, rec.DoubleBuffer, "double_buffer()")
            found.append(buffers[stage.op])
    return found


def _pipelined(s: Schedule, buffers: dict) -> dict[Buffer, tuple[int, bool, bool]]:
    """The buffers of the stages that asked for pipeline(), with their numbers of stages,
    whether the copy engine fills them and whether a producer warp issues its copies."""
    found = {}
    for stage in s.stages:
        if stage.pipeline_stages is not None:
            call = f"pipeline(stages={stage.pipeline_stages})"
            _check_refilled(s, stage, rec.Pipeline, call)
            if buffers[stage.op].scope != "shared":
                record = s.record_for(rec.Pipeline, stage=stage.name)
                raise ScopeError(
                    message(
                        stage.name,
                        call,
                        record.loc,
                        f"'{stage.name}' is in {buffers[stage.op].scope} memory; asynchronous "
                        "copies fill shared memory: set_scope('shared') or compute it inside "
                        "the block loops",
                    )
                )
            found[buffers[stage.op]] = (
                stage.pipeline_stages,
                stage.pipeline_tma,
                stage.pipeline_warp_specialize,
            )
    return found


def _check_refilled(s: Schedule, stage, record_type: type, call: str) -> None:
    if not isinstance(stage.attach, rec.ComputeAt):
        record = s.record_for(record_type, stage=stage.name)
        raise ScopeError(
            message(
                stage.name,
                call,
                record.loc,
                f"'{stage.name}' is not computed at a loop of its consumer, so nothing "
                "refills it; compute_at the loop whose iterations consume it",
            )
        )


def _swizzle(s: Schedule, stage, buffer: Buffer) -> int:
    """The stage's swizzle, checked: a shared buffer of whole 128-byte lines (the permutation
    moves chunks within their line)."""
    record = s.record_for(rec.Swizzle, stage=stage.name)
    call = f"swizzle({stage.swizzle_bytes})"
    if buffer.scope != "shared":
        why = f"'{stage.name}' is in {buffer.scope} memory; swizzled layouts are for shared memory"
        raise ScopeError(message(stage.name, call, record.loc, why))
    size = constant_bytes(buffer)
    if size is None or size % 128:
        held = "a symbolic size" if size is None else f"{size} bytes"
        why = (
            f"its buffer holds {held}, not a whole number of 128-byte lines; make its box a "
            "multiple of 128 bytes"
        )
        raise ScopeError(message(stage.name, call, record.loc, why))
    return stage.swizzle_bytes


def _strides(align: dict[int, tuple[int, int]], shape: tuple) -> tuple | None:
    """Row-major strides, each aligned dimension's padded up to ``factor * k + offset``."""
    if not align:
        return None
    strides: list = [None] * len(shape)
    stride: object = 1
    for d in reversed(range(len(shape))):
        if d in align:
            factor, offset = align[d]
            stride = stride + (offset - stride) % factor
        strides[d] = const(stride, "int32") if isinstance(stride, int) else stride
        extent = shape[d]
        both = isinstance(stride, int) and isinstance(extent, Const)
        stride = stride * extent.value if both else strides[d] * extent
    return tuple(strides)


def _extent(constant, pa, params: Params):
    if constant is not None:
        return const(constant, "int32")
    return param_expr(pa, params.context, params.vars)


def _is_read(op: Operation, placement: Placement) -> bool:
    return any(acc.op is op for p in placement.all() for acc in p.stmt.reads)


__all__ = ["Var", "lower"]
