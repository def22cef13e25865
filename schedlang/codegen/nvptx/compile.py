"""Lowered functions to PTX, through LLVM's NVPTX backend; compiled once per process.

The order is the one that keeps modules small: parse and verify the generated IR, link
libdevice when the module calls ``__nv_*`` math (or schedlang's `softmath` library when it calls
``sl.*``, where libdevice is missing), give every definition except the kernels
internal linkage (libdevice's hundreds of functions then vanish unless called, and calls
inline), unroll the loops marked for it, run LLVM's ``-O3`` pipeline for the GPU (which also
resolves libdevice's ``__nvvm_reflect`` queries: no flush-to-zero, no fast-math), and emit PTX
for the chosen architecture. The PTX ISA version is the lowest the architecture allows, and at
least 8.0 (CUDA 12.0), so that any driver of the last years and ptxas 12 or 13 accept it.
"""

from __future__ import annotations

import functools
import threading
import weakref

import llvmlite.binding as llvm

from ...errors import InternalError, LoweringError
from ...loopir.core.nodes import LoweredFunc
from ...loopir.core.visit import walk_stmt
from ...loopir.gpu.passes import gpu_passes
from ...loopir.memory.fragments import is_wgmma
from ...platform_info import NVPTX_TRIPLE, probe_nvptx
from ..cpu.jit import failed
from ..fingerprint import fingerprint
from ..llvm.control import UNROLL_FULL
from ..llvm.passes import run_passes
from ..llvm.text import module_text
from . import float8, libdevice, softmath
from .arch import DEFAULT_ARCH, check_arch, ptx_version
from .compiled import CompiledCuda
from .module import build_module
from .plan import DevicePlan, plan_kernels

_lock = threading.Lock()
_memory: weakref.WeakValueDictionary[str, CompiledCuda] = weakref.WeakValueDictionary()


@functools.cache
def machine(arch: str) -> llvm.TargetMachine:
    probe = probe_nvptx()  # registers LLVM's targets on llvmlite versions that need it
    if not probe.ok:
        raise LoweringError(f"the cuda target needs LLVM's NVPTX backend, which is {probe.detail}")
    _scan_further()
    target = llvm.Target.from_triple(NVPTX_TRIPLE)
    return target.create_target_machine(cpu=arch, features=f"+ptx{ptx_version(arch)}", opt=3)


@functools.cache
def _scan_further() -> None:
    """Let LLVM's memory dependence analysis look 1000 instructions back for a load's last
    store (100 by default). A running statistic of a scan kept in local memory (indexed by
    the step's parity) is read again after a warpgroup's softmax of 64 exponentials, several
    hundred instructions later: past the default limit GVN reloads it, and every exponential
    that the second read feeds is computed twice (attention's second products overlapped with
    the next step's softmax: 132 ``ex2`` a step instead of 68)."""
    llvm.set_option("schedlang", "-memdep-block-scan-limit=1000")


def compile_cuda(
    func: LoweredFunc, arch: str = DEFAULT_ARCH, min_blocks: int = 0, contract: bool = True
) -> CompiledCuda:
    """`func`, as lowered, through the GPU loop-IR passes (`gpu_passes`; the plan holds the
    result) to PTX kernels for `arch`, each leaving room for `min_blocks` blocks per
    multiprocessor when positive, with ``a * b + c`` fused where `contract` (off: the NVPTX
    backend emits ``mul.rn``/``add.rn``, which ptxas never fuses). Cached by the fingerprint
    of `func` before the passes, which are deterministic and multiply its size by unrolling;
    with the options and the math library that calls link (libdevice or schedlang's own).
    Kept while a kernel holds it."""
    math = "libdevice" if libdevice.find() is not None else "softmath"
    key = fingerprint(func, f"cuda {check_arch(arch)} {min_blocks} {contract} {math}")
    float8.check_arch(func, arch)
    hit = _memory.get(key)
    if hit is not None:
        return hit
    plan = plan_kernels(gpu_passes(func))
    arch = _for_products(plan, arch)
    tm = machine(arch)
    text = module_text(build_module(plan, arch, str(tm.target_data), min_blocks, contract))
    ptx = _ptx(text, [k.name for k in plan.kernels], tm)
    compiled = CompiledCuda(plan, arch, text, ptx)
    _memory[key] = compiled
    return compiled


def _for_products(plan: DevicePlan, arch: str) -> str:
    """`arch`, or sm_90a where a kernel multiplies by warpgroups: ``wgmma`` exists only on
    Hopper's arch-specific target (an sm_90a kernel runs on sm_90 devices alone, as the
    instruction does). Any other architecture is refused."""
    if not any(is_wgmma(s) for k in plan.kernels for s in walk_stmt(k.body)):
        return arch
    if arch.rstrip("a") == "sm_90":
        return "sm_90a"
    raise LoweringError(
        f"the kernel multiplies with wgmma (sl.intrin.wgmma), which only Hopper GPUs run "
        f"(sm_90a), and it is built for {arch}; build it for 'cuda -arch=sm_90', or use "
        "sl.intrin.mma_sync"
    )


def clear_memory_cache() -> None:
    """Forget compiled kernels (those alive keep theirs); for measuring compile time."""
    _memory.clear()


def _ptx(text: str, kernels: list[str], tm: llvm.TargetMachine) -> str:
    with _lock:
        try:
            module = llvm.parse_assembly(text)
            module.verify()
        except RuntimeError as error:
            raise failed("accept the generated IR", error, text) from None
        declared = [f.name for f in module.functions if f.is_declaration]
        if any(name.startswith("__nv_") for name in declared):
            _link_libdevice(module, tm)
        if any(name.startswith(softmath.PREFIX) for name in declared):
            _link_softmath(module, tm)
        for value in (*module.functions, *module.global_variables):
            if not value.is_declaration and value.name not in kernels:
                value.linkage = "internal"
        if UNROLL_FULL in text:
            _unroll_hinted_loops(module, tm)
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        builder = llvm.create_pass_builder(tm, options)
        run_passes(builder.getModulePassManager(), module, builder)
        unresolved = [
            f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")
        ]
        if unresolved:
            raise InternalError(f"the kernels call the undefined functions {unresolved}")
        return tm.emit_assembly(module)


def _unroll_hinted_loops(module: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Unroll the loops the code generator marked (`control.for_range`) before anything else
    runs, so that ``-O3`` meets them as copies, as it would had the loop IR unrolled them.
    Left to ``-O3``'s own full unrolling, which comes after its first simplifications, the
    GEMM's k loop came out with its addresses carried differently and ran 1-3% slower."""
    passes = llvm.create_new_module_pass_manager()
    passes.add_loop_unroll_pass()
    run_passes(passes, module, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(3)))


def _link_libdevice(module: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    code = libdevice.bitcode()
    if code is None:  # NvptxTarget.external_math raised before a call was emitted
        raise InternalError("a libdevice function is called but libdevice is not found")
    _link(module, llvm.parse_bitcode(code), tm)


def _link_softmath(module: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    _link(module, llvm.parse_assembly(softmath.library()), tm)


def _link(module: llvm.ModuleRef, library: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    library.triple = NVPTX_TRIPLE
    library.data_layout = str(tm.target_data)
    module.link_in(library)
