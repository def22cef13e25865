"""`sl.build`: lower a schedule and compile it for a target.

Imported by the package itself, so it imports the compilers (llvmlite) and cuda-python only
when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import LoweringError

if TYPE_CHECKING:
    from .ir.tensor import Tensor
    from .runtime.cuda_kernel import CudaKernel
    from .runtime.kernel import Kernel
    from .schedule.schedule import Schedule

TARGETS = ("cpu", "cuda", "auto")


def resolve_target(target: str) -> tuple[str, str | None]:
    """``(name, arch)`` for a target string: ``"cpu"``, ``"cuda"``, ``"cuda -arch=sm_80"``, or
    ``"auto"`` (CUDA when a GPU and driver are usable here, else the CPU). `arch` is None
    unless given."""
    words = target.split() if isinstance(target, str) else []
    if not words or words[0] not in TARGETS:
        raise LoweringError(f"unknown target {target!r}; use 'cpu', 'cuda' or 'auto'")
    name, options = words[0], words[1:]
    arch = None
    for option in options:
        if name == "cuda" and option.startswith("-arch="):
            arch = option.removeprefix("-arch=")
            continue
        raise LoweringError(
            f"target {target!r}: unknown option {option!r}; the cuda target takes -arch=sm_XY"
        )
    if name == "auto":
        from .platform_info import auto_target

        name = auto_target()
    return name, arch


def build(
    s: Schedule, args: list[Tensor], target: str = "cpu", name: str = "main"
) -> Kernel | CudaKernel:
    """Compile schedule `s` into a kernel over the buffers of `args` (in order)."""
    target_name, arch = resolve_target(target)
    from .driver import lower

    if target_name == "cpu":
        from .runtime.kernel import Kernel

        return Kernel.for_cpu(lower(s, args, name))
    from .codegen.nvptx_compile import check_arch, compile_cuda
    from .runtime.cuda_kernel import CudaKernel

    arch = check_arch(arch) if arch is not None else _default_arch()
    func = _gpu_passes(lower(s, args, name))
    return CudaKernel(func, compile_cuda(func, arch), f"cuda -arch={arch}")


def _gpu_passes(func):
    """Local buffers in registers: register tiles computed whole (`loopir.register_guards`), their
    index loops unrolled (`loopir.registers`), and whole tiles free of guards
    (`loopir.full_tiles`)."""
    from dataclasses import replace

    from .loopir.divmod import simplify_divisions
    from .loopir.full_tiles import split_full_tiles
    from .loopir.register_guards import drop_register_guards
    from .loopir.registers import mark_register_loops
    from .loopir.simplify import simplify
    from .loopir.unroll import unroll_loops

    body = mark_register_loops(drop_register_guards(func.body))
    body = simplify(split_full_tiles(simplify_divisions(simplify(unroll_loops(body)))))
    return replace(func, body=body)


def _default_arch() -> str:
    """The GPU's own architecture when one is usable here, else sm_90 (Hopper)."""
    from .codegen.nvptx_compile import DEFAULT_ARCH
    from .platform_info import cuda_available, cuda_devices

    if cuda_available():
        return cuda_devices()[0].arch
    return DEFAULT_ARCH
