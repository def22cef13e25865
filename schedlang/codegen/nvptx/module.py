"""The LLVM module of a `DevicePlan`: one kernel function per planned kernel.

Every kernel takes the same parameters, the global buffers of the plan (the function's
parameters, then the temporaries) as ``ptr addrspace(1)``, then every symbolic size and host
loop variable as ``i64``, then the tensor maps of its bulk copies (`bulk_copy`), so the
launcher passes one argument list to all of them. The pointers are declared ``noalias``
(the runtime checks that outputs overlap nothing) and ``align 16`` (the runtime refuses buffers
that start elsewhere). Kept in address space 1 rather than cast to generic pointers, they carry that
alignment to every access: LLVM proves a contiguous access of 4 floats at an offset that is a
multiple of 4 to be 16-byte aligned, and emits one ``ld.global.v4`` for it instead of four.
``nvvm.annotations`` mark the kernels and their maximum block shape, which ptxas uses to budget
registers, and when asked (``-min-blocks-per-sm``) how many blocks must fit on a multiprocessor
at once, which caps the registers of each thread.
"""

from __future__ import annotations

from llvmlite import ir

from ...errors import LoweringError
from ...platform_info import NVPTX_TRIPLE
from ..llvm.function import FunctionScope
from ..llvm.stmt import StmtEmitter
from ..llvm.types import I32, I64
from .bulk_copy import MAP_ALIGN, MAP_BYTES
from .nvvm import GLOBAL
from .plan import DevicePlan, KernelPlan
from .shared_layout import BUFFER_ALIGN
from .target import NvptxTarget

GLOBAL_PTR = ir.PointerType(addrspace=GLOBAL)


def build_module(
    plan: DevicePlan, arch: str, data_layout: str, min_blocks: int = 0, contract: bool = True
) -> ir.Module:
    # a context of its own: the named types of one kernel (`wgmma._registers`) are printed in
    # its module alone, and die with it
    module = ir.Module(name=plan.func.name, context=ir.Context())
    module.triple = NVPTX_TRIPLE
    module.data_layout = data_layout
    for kernel in plan.kernels:
        _kernel(module, plan, kernel, arch, min_blocks, contract)
    return module


def _kernel(
    module: ir.Module,
    plan: DevicePlan,
    kernel: KernelPlan,
    arch: str,
    min_blocks: int,
    contract: bool,
) -> None:
    buffers, sizes, maps = plan.buffers, plan.sizes, plan.tensor_maps
    nbuffers = len(buffers)
    map_t = ir.PointerType(ir.ArrayType(ir.IntType(8), MAP_BYTES))
    params = [GLOBAL_PTR] * nbuffers + [I64] * len(sizes) + [map_t] * len(maps)
    entry = ir.Function(module, ir.FunctionType(ir.VoidType(), params), kernel.name)
    for arg in entry.args[:nbuffers]:
        arg.add_attribute("noalias")
        arg.attributes.align = BUFFER_ALIGN
    first_map = nbuffers + len(sizes)
    for arg in entry.args[first_map:]:
        arg.add_attribute("byval")
        arg.attributes.align = MAP_ALIGN
    scope = FunctionScope(entry)
    map_args = dict(zip(maps, entry.args[first_map:]))
    em = StmtEmitter(scope, NvptxTarget(arch, kernel, buffers, map_args, contract))
    for buffer, arg in zip(buffers, entry.args):
        em.buffers[buffer] = arg
    for var, arg in zip(sizes, entry.args[nbuffers:]):
        em.bind(var, arg, index=True)
    em.stmt(kernel.body)
    scope.finish()
    module.add_named_metadata("nvvm.annotations", [entry, "kernel", ir.Constant(I32, 1)])
    if maps:  # the maps' own addresses go to the copy engine (1-based parameter numbers)
        numbers = [ir.Constant(I32, first_map + k + 1) for k in range(len(maps))]
        annotation = [entry, "grid_constant", module.add_metadata(numbers)]
        module.add_named_metadata("nvvm.annotations", annotation)
    for axis, threads in zip("xyz", kernel.block):
        annotation = [entry, f"maxntid{axis}", ir.Constant(I32, threads)]
        module.add_named_metadata("nvvm.annotations", annotation)
    # .minnctapersm: ptxas caps registers so that this many blocks fit; a kernel that hands
    # registers over needs it known (ptxas ignores setmaxnreg without it, C7508)
    if kernel.registers and min_blocks > 1:
        raise LoweringError(
            f"kernel '{kernel.name}': its producer warpgroup hands its registers to the "
            f"consumers ({kernel.registers} a thread), which a multiprocessor has for one block "
            f"only, but -min-blocks-per-sm={min_blocks} asks for {min_blocks}; leave the option "
            "out, or stage with pipeline(..., warp_specialize=False)"
        )
    blocks = min_blocks or (1 if kernel.registers else 0)
    if blocks:
        annotation = [entry, "minctasm", ir.Constant(I32, blocks)]
        module.add_named_metadata("nvvm.annotations", annotation)
