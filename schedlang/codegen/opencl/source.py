"""A lowered function as one OpenCL C program: the kernels of the NVPTX target's plan
(`nvptx.plan`, after the GPU loop-IR passes), in launch order.

Every kernel takes the same parameters, as the CUDA kernels do: the plan's global buffers
(the function's parameters, then its temporaries) as ``__global`` pointers, declared
``restrict`` (calls check that outputs overlap nothing), then each symbolic size and host loop
variable in its dtype; so one argument list serves every launch. Kernels state their
work-group shape (``reqd_work_group_size``): the block the plan computed, which is the local
size of every launch. The program enables ``cl_khr_fp64`` where it computes in double.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...loopir.core.nodes import Load, LoweredFunc, Store
from ...loopir.core.visit import stmt_exprs, walk_expr, walk_stmt
from ...loopir.gpu.passes import gpu_passes
from ..nvptx.plan import DevicePlan, KernelPlan, plan_kernels
from .expr import ExprPrinter
from .helpers import Helpers
from .names import Names
from .stmt import KernelWriter
from .types import compute_type, storage_type
from .unsupported import check_opencl

_FP64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable"
_NO_CONTRACT = "#pragma OPENCL FP_CONTRACT OFF"


@dataclass(frozen=True, eq=False)
class OpenCLProgram:
    """A lowered function as OpenCL: the plan the launcher follows and the source it builds."""

    plan: DevicePlan
    source: str


def opencl_program(func: LoweredFunc, contract: bool = True) -> OpenCLProgram:
    """The OpenCL C program of `func` (lowered for a GPU); a LoweringError for what OpenCL
    cannot express (`unsupported`). Without `contract`, ``a * b + c`` rounds twice
    (``FP_CONTRACT OFF``); with it the compiler may fuse it, as C's default allows."""
    check_opencl(func)
    plan = plan_kernels(gpu_passes(func))
    helpers = Helpers()
    kernels = [_kernel(plan, kernel, helpers) for kernel in plan.kernels]
    parts = [helpers.text(), *kernels]
    text = "\n\n".join(part for part in parts if part)
    if not contract:
        text = f"{_NO_CONTRACT}\n\n{text}"
    if "double" in text:
        text = f"{_FP64}\n\n{text}"
    return OpenCLProgram(plan, text + "\n")


def _kernel(plan: DevicePlan, kernel: KernelPlan, helpers: Helpers) -> str:
    names = Names()
    printer = ExprPrinter(names, helpers)
    params = []
    for buffer in plan.buffers:
        params.append(f"__global {storage_type(buffer.dtype)}* restrict {printer.buffer(buffer)}")
    for var in plan.sizes:
        params.append(f"{compute_type(var.dtype)} {names(var, var.name)}")
    writer = KernelWriter(kernel, printer, _reads_what_it_writes(kernel))
    writer.stmt(kernel.body)
    x, y, z = kernel.block
    head = [
        f"__kernel __attribute__((reqd_work_group_size({x}, {y}, {z})))",
        f"void {kernel.name}({', '.join(params)}) {{",
    ]
    body = [f"  {line}" for line in writer.local_arrays] + writer.lines
    return "\n".join([*head, *body, "}"])


def _reads_what_it_writes(kernel: KernelPlan) -> bool:
    """Whether the kernel loads from a global buffer it stores to: its barriers must then
    order global memory too."""
    stored = {
        id(s.buffer)
        for s in walk_stmt(kernel.body)
        if isinstance(s, Store) and s.buffer.scope == "global"
    }
    return any(
        isinstance(n, Load) and id(n.buffer) in stored
        for s in walk_stmt(kernel.body)
        for e in stmt_exprs(s)
        for n in walk_expr(e)
    )
