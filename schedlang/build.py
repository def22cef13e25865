"""`sl.build`: lower a schedule and compile it for a target.

Imported by the package itself, so it imports the compiler (llvmlite) only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import LoweringError

if TYPE_CHECKING:
    from .ir.tensor import Tensor
    from .runtime.kernel import Kernel
    from .schedule.schedule import Schedule

TARGETS = ("cpu", "cuda", "auto")


def resolve_target(target: str) -> str:
    """The target `target` names: ``"auto"`` is the CPU until the CUDA target exists."""
    name = target.split()[0] if isinstance(target, str) and target.strip() else target
    if name == "cuda":
        raise LoweringError(
            f"target {target!r}: the CUDA target is not available yet; build with target='cpu'"
        )
    if name not in TARGETS:
        raise LoweringError(f"unknown target {target!r}; use 'cpu', 'cuda' or 'auto'")
    return "cpu"


def build(s: Schedule, args: list[Tensor], target: str = "cpu", name: str = "main") -> Kernel:
    """Compile schedule `s` into a kernel over the buffers of `args` (in order)."""
    resolve_target(target)  # every target that resolves is the CPU, for now
    from .driver import lower
    from .runtime.kernel import Kernel

    return Kernel.for_cpu(lower(s, args, name))
