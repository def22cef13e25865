"""`CompiledCuda`, what compiling a lowered function for the GPU gives: apart from the compiler,
so that a kernel loaded from disk (`runtime.saved`, `build_cache`) needs no LLVM."""

from __future__ import annotations

from dataclasses import dataclass

from .plan import DevicePlan


@dataclass(frozen=True, eq=False)
class CompiledCuda:
    """A lowered function as kernels: the plan the launcher follows and the PTX it loads."""

    plan: DevicePlan
    arch: str
    llvm_ir: str
    ptx: str
