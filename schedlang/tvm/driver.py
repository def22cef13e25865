"""``tvm.lower`` and ``tvm.build`` over schedlang's."""

from __future__ import annotations

from .. import build as build_kernel
from .. import lower as lower_schedule
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
    return lower_schedule(inputs, list(args or []), name)


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
    kernel = build_kernel(inputs, list(args or []), target=chosen.schedlang, name=name)
    return Module(kernel, name)


def _no_binds(binds: object) -> None:
    if binds:
        from ..errors import LoweringError

        raise LoweringError("binds= (buffers declared by hand) is not supported by schedlang")
