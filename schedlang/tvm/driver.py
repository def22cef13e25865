"""``tvm.lower`` and ``tvm.build`` over schedlang's."""

from __future__ import annotations

from .. import build as build_kernel
from .. import lower as lower_schedule
from ..schedule.records import ComputeInline
from .runtime import Module
from .target import as_target


def lower(
    inputs: object,
    args: list | None = None,
    name: str = "main",
    binds: object = None,
    simple_mode: bool = False,
) -> object:
    """The loop nest of schedule `inputs` over `args`, printable (``simple_mode`` is how
    schedlang always prints it)."""
    _no_binds(binds)
    kept, _ = _kernel_args(inputs, list(args or []))
    return lower_schedule(inputs, kept, name)


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
    kept, skipped = _kernel_args(inputs, list(args or []))
    kernel = build_kernel(inputs, kept, target=chosen.schedlang, name=name)
    return Module(kernel, name, skipped)


def _kernel_args(s: object, args: list) -> tuple[list, tuple[int, ...]]:
    """TE's arguments as schedlang's kernel takes them. TE lets an inlined tensor be listed:
    its buffer is passed and nothing writes it. schedlang refuses such an argument in its own
    API (the caller would expect its values); here it is left out of the kernel, and the
    module drops the array passed at its position (`skipped`), leaving it as it was."""
    kept, skipped = [], []
    by_op = getattr(s, "_by_op", {})
    for k, a in enumerate(args):
        stage = by_op.get(getattr(a, "op", None))
        inlined = stage is not None and isinstance(stage.attach, ComputeInline)
        if inlined and a.op not in s.output_ops:
            skipped.append(k)
        else:
            kept.append(a)
    return kept, tuple(skipped)


def _no_binds(binds: object) -> None:
    if binds:
        from ..errors import LoweringError

        raise LoweringError("binds= (buffers declared by hand) is not supported by schedlang")
