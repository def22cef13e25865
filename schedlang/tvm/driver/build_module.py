"""``tvm.lower``, ``tvm.build`` and ``schedule_to_module`` over schedlang's."""

from __future__ import annotations

from ... import build as build_kernel
from ... import lower as lower_schedule
from ...errors import entry_point
from ...ir.expr import Var
from ...ir.scan import ScanOp
from ...ir.tensor import Operation, PlaceholderOp, Tensor
from ...schedule.records import ComputeInline
from ..ir_module import IRModule
from ..runtime import Module
from ..target import as_target


@entry_point
def lower(
    inputs: object,
    args: list | None = None,
    name: str = "main",
    binds: object = None,
    simple_mode: bool = False,
) -> IRModule:
    """The loop nest of schedule `inputs` over `args` as a module holding one function,
    `name`; printed, it is the loop nest (``simple_mode`` is how schedlang always prints)."""
    _no_binds(binds)
    kept, _, _ = _kernel_args(inputs, list(args or []))
    return IRModule.of(lower_schedule(inputs, kept, name))


@entry_point
def schedule_to_module(
    sch: object, args: list | None = None, name: str = "main", binds: object = None
) -> IRModule:
    """TE's module of a schedule before its passes. schedlang's loop nest comes out of one
    polyhedral step with nothing in between, so this is `lower`'s module."""
    return lower(sch, args, name, binds)


@entry_point
def build(
    inputs: object,
    args: list | None = None,
    target: object = None,
    target_host: object = None,
    name: str = "default_function",
    binds: object = None,
) -> Module:
    """Schedule `inputs` over `args` compiled for `target` (``"llvm"``, ``"cuda"``, a
    `Target`); the host of a CUDA target is always the CPU schedlang runs on."""
    _no_binds(binds)
    chosen = as_target(target)
    kept, skipped, sizes = _kernel_args(inputs, list(args or []))
    kernel = build_kernel(inputs, kept, target=chosen.schedlang, name=name)
    return Module(kernel, name, skipped, sizes)


def _kernel_args(s: object, args: list) -> tuple[list, tuple[int, ...], dict[int, str]]:
    """TE's arguments as schedlang's kernel takes them. TE lets an inlined tensor be listed:
    its buffer is passed and nothing writes it. schedlang refuses such an argument in its own
    API (the caller would expect its values); here it is left out of the kernel, and the
    module drops the array passed at its position (`skipped`), leaving it as it was. TE also
    lists size variables (``te.var("n")``), whose values a call passes among the arrays:
    schedlang's kernels read sizes off the arrays, so a size is left out too, and the value
    passed at its position (`sizes`: position -> name) goes to the kernel by name, which
    checks it against the arrays' shapes. An input the schedule does not read (a gradient
    that does not depend on the value it differentiates by) is left out as an inlined tensor
    is. A scan's state placeholder listed stands, as in
    TE, for the scan's tensor (the state's rows are the scan's)."""
    kept, skipped, sizes = [], [], {}
    by_op = getattr(s, "_by_op", {})
    scans = _scan_of_state(s)
    for k, a in enumerate(args):
        if isinstance(a, Var) and a.kind == "size":
            sizes[k] = a.name
            continue
        a = scans.get(getattr(a, "op", None), a)
        stage = by_op.get(getattr(a, "op", None))
        inlined = stage is not None and isinstance(stage.attach, ComputeInline)
        unread = stage is None and isinstance(getattr(a, "op", None), PlaceholderOp)
        if (inlined and a.op not in s.output_ops) or (unread and by_op):
            skipped.append(k)
        else:
            kept.append(a)
    return kept, tuple(skipped), sizes


def _scan_of_state(s: object) -> dict[Operation, Tensor]:
    """A scan state's placeholder op -> the scan's tensor."""
    found = {}
    for stage in getattr(s, "stages", ()):
        for op in stage.ops:
            if isinstance(op, ScanOp):
                found[op.state.op] = op.output(op.value_index)
    return found


def _no_binds(binds: object) -> None:
    if binds:
        from ...errors import LoweringError

        raise LoweringError("binds= (buffers declared by hand) is not supported by schedlang")
