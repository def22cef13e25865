"""`sl.build`: lower a schedule and compile it for a target.

Imported by the package itself, so it imports the compilers (llvmlite) and cuda-python only
when called.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .collector import paused
from .errors import LoweringError, entry_point

if TYPE_CHECKING:
    from .ir.tensor import Tensor
    from .runtime.cuda.kernel import CudaKernel
    from .runtime.kernel import Kernel
    from .runtime.opencl.kernel import OpenCLKernel
    from .schedule.schedule import Schedule

TARGETS = ("cpu", "cuda", "opencl", "auto")


@dataclass(frozen=True)
class ResolvedTarget:
    """A target string read: its name, for cuda the architecture (None: the GPU's own) and
    the blocks per multiprocessor ptxas must leave room for (0: its choice), and whether
    ``a * b + c`` may become one fused multiply-add (`contract`)."""

    name: str
    arch: str | None = None
    min_blocks: int = 0
    contract: bool = True

    @property
    def options(self) -> str:
        """The options that change the code, as a target string spells them after its name."""
        return "" if self.contract else " -fp-contract=off"


def resolve_target(target: str) -> ResolvedTarget:
    """A target string: ``"cpu"``, ``"cuda"``, ``"opencl"`` (OpenCL C source, run through
    pyopencl), ``"auto"`` (CUDA when a GPU and driver are usable here, else the CPU), with
    options. Every target takes ``-fp-contract=off`` (clang's
    ``-ffp-contract=off``: each ``*`` and ``+`` rounds on its own, as the reference evaluator
    computes them; by default they may fuse, see docs/math.md). The cuda target also takes
    ``-arch=sm_80`` and ``-min-blocks-per-sm=2`` (CUDA's ``__launch_bounds__`` minimum: ptxas
    keeps each thread's registers few enough for that many blocks to run at once on a
    multiprocessor)."""
    words = target.split() if isinstance(target, str) else []
    if not words or words[0] not in TARGETS:
        raise LoweringError(f"unknown target {target!r}; use 'cpu', 'cuda', 'opencl' or 'auto'")
    name, options = words[0], words[1:]
    arch, min_blocks, contract = None, 0, True
    for option in options:
        key, _, value = option.partition("=")
        if key == "-fp-contract":
            contract = _contract(target, value)
        elif name == "cuda" and key == "-arch":
            arch = value
        elif name == "cuda" and key == "-min-blocks-per-sm" and value.isdigit() and int(value):
            min_blocks = int(value)
        elif name == "cuda":
            raise LoweringError(
                f"target {target!r}: unknown option {option!r}; the cuda target takes "
                "-arch=sm_XY and -min-blocks-per-sm=N (N a positive integer)"
            )
        else:
            raise LoweringError(
                f"target {target!r}: unknown option {option!r}; the {name} target takes "
                "-fp-contract=on|off only (-arch and -min-blocks-per-sm are the cuda target's)"
            )
    if name == "auto":
        from .platform_info import auto_target

        name = auto_target()
    return ResolvedTarget(name, arch, min_blocks, contract)


def _contract(target: str, value: str) -> bool:
    if value not in ("on", "off"):
        raise LoweringError(
            f"target {target!r}: -fp-contract is 'on' (a * b + c may fuse into one "
            f"multiply-add, the default) or 'off' (each operation rounds), not {value!r}"
        )
    return value == "on"


@entry_point
def build(
    s: Schedule, args: list[Tensor], target: str = "cpu", name: str = "main"
) -> Kernel | CudaKernel | OpenCLKernel:
    """Compile schedule `s` into a kernel over the buffers of `args` (in order).

    `target` is ``"cpu"``, ``"cuda"``, ``"opencl"`` (GPU schedules as OpenCL C, whose
    ``.source`` needs nothing to build and whose calls need pyopencl and a device) or
    ``"auto"`` (CUDA where a GPU is usable), followed by
    options: ``-fp-contract=off`` on any target computes ``a * b + c`` with two roundings, as
    the reference does, instead of one fused multiply-add (docs/math.md); the cuda target
    also takes ``-arch=sm_XY`` and ``-min-blocks-per-sm=N``. Example:
    ``sl.build(s, [A, B, C], target="cuda -arch=sm_90 -fp-contract=off")``."""
    resolved = resolve_target(target)
    with paused():
        from .runtime.extern_calls import build_with_externs, extern_ops

        if extern_ops(s):
            return build_with_externs(
                s,
                args,
                resolved.name,
                name,
                lambda ks, kargs: _build(ks, kargs, resolved, name),
                lambda lowered: _build_function(lowered, resolved),
            )
        return _build(s, args, resolved, name)


def _build(s: Schedule, args: list[Tensor], resolved: ResolvedTarget, name: str):
    from .build_cache import cached

    if resolved.name == "cpu":
        from .codegen.cpu.host_key import host_key

        _refuse_tensor_cores(s)
        _refuse_hardware_indices(s)
        host = lambda: f"cpu {host_key()}{resolved.options}"  # noqa: E731
        return cached(s, args, name, host, lambda: _build_cpu(s, args, name, resolved))
    if resolved.name == "opencl":
        from .driver import lower_for_gpu

        _refuse_cuda_only(s)
        _refuse_c_functions(s, "opencl")
        return _opencl_kernel(lower_for_gpu(s, args, name), resolved)
    from .codegen.nvptx import libdevice
    from .codegen.nvptx.arch import check_arch
    from .runtime.cuda import start

    _refuse_c_functions(s, "cuda")
    if resolved.arch is not None:
        check_arch(resolved.arch)

    @functools.cache
    def arch() -> str:  # asked after the lowering, or for a build on disk
        return resolved.arch if resolved.arch is not None else _default_arch()

    def shown() -> str:
        more = f" -min-blocks-per-sm={resolved.min_blocks}" if resolved.min_blocks else ""
        return f"cuda -arch={arch()}{more}{resolved.options}"

    def make() -> CudaKernel:
        from .codegen.nvptx.compile import compile_cuda
        from .driver import lower_for_gpu
        from .loopir.intrin.lowering import apply_lowering_rules
        from .runtime.cuda.kernel import CudaKernel

        # CUDA starts beside the lowering, which needs no GPU; a build on disk needs neither
        start.start()
        lowered = apply_lowering_rules(lower_for_gpu(s, args, name), "cuda")
        compiled = compile_cuda(lowered, arch(), resolved.min_blocks, resolved.contract)
        return CudaKernel(compiled.plan.func, compiled, shown())

    return cached(s, args, name, lambda: f"{shown()} math={libdevice.find()}", make)


def _build_function(lowered, resolved: ResolvedTarget):
    """A kernel of a loop-IR function made outside a schedule's lowering (a hybrid script's)."""
    from .loopir.core.nodes import For
    from .loopir.core.visit import walk_stmt
    from .loopir.intrin.lowering import apply_lowering_rules
    from .runtime.kernel import Kernel

    if resolved.name == "cpu":
        bound = [s for s in walk_stmt(lowered.body) if isinstance(s, For) and s.kind == "bound"]
        if bound:
            raise LoweringError(
                f"hybrid script '{lowered.name}': loop '{bound[0].var.name}' is bound to "
                f"{bound[0].thread}, which needs a GPU; build for target='cuda'"
            )
        return Kernel.for_cpu(apply_lowering_rules(lowered, "cpu"), contract=resolved.contract)
    if resolved.name == "opencl":
        return _opencl_kernel(lowered, resolved)
    from .codegen.nvptx.compile import compile_cuda
    from .runtime.cuda import start
    from .runtime.cuda.kernel import CudaKernel

    start.start()
    arch = resolved.arch if resolved.arch is not None else _default_arch()
    gpu = apply_lowering_rules(lowered, "cuda")
    compiled = compile_cuda(gpu, arch, resolved.min_blocks, resolved.contract)
    return CudaKernel(compiled.plan.func, compiled, f"cuda -arch={arch}{resolved.options}")


def _opencl_kernel(lowered, resolved: ResolvedTarget) -> OpenCLKernel:
    """OpenCL C for a GPU-lowered function; no device is needed until the kernel is called."""
    from .codegen.opencl.source import opencl_program
    from .loopir.intrin.lowering import apply_lowering_rules
    from .runtime.opencl.kernel import OpenCLKernel

    lowered = apply_lowering_rules(lowered, "opencl")
    program = opencl_program(lowered, resolved.contract)
    return OpenCLKernel(lowered, program, f"opencl{resolved.options}")


def _build_cpu(s: Schedule, args: list[Tensor], name: str, resolved: ResolvedTarget) -> Kernel:
    from .driver import lower
    from .loopir.intrin.lowering import apply_lowering_rules
    from .runtime.kernel import Kernel

    lowered = apply_lowering_rules(lower(s, args, name), "cpu")
    return Kernel.for_cpu(lowered, contract=resolved.contract)


def _refuse_tensor_cores(s: Schedule) -> None:
    """The cpu target has no tensor cores and no copy engine: named at the tensorize or the
    pipeline that asked for them."""
    from .schedule import records as rec
    from .schedule.errors import message

    for r in s.records:
        if isinstance(r, rec.Pipeline) and r.tma:
            from .codegen.cpu.target import BULK_COPIES_NEED_CUDA  # the code generator's

            raise LoweringError(message(r.stage, r.call, r.loc, BULK_COPIES_NEED_CUDA))
    _refuse_tensor_instructions(
        s,
        "tensor-core instructions run on a CUDA GPU, the cpu target has none: build with "
        "target='cuda' (kernel.simulate runs it on the CPU)",
    )


def _refuse_cuda_only(s: Schedule) -> None:
    """Tensor cores, asynchronous copies and the copy engine are CUDA's: named at the
    tensorize or the pipeline that asked for them when building for opencl (a tensorize
    first: its schedules pipeline the tiles it reads)."""
    from .schedule import records as rec
    from .schedule.errors import message

    _refuse_tensor_instructions(
        s,
        "tensor-core instructions are CUDA's, the opencl target has none: build with "
        "target='cuda' (kernel.simulate runs it on the CPU)",
    )
    for r in s.records:
        if isinstance(r, rec.Pipeline):
            raise LoweringError(
                message(
                    r.stage,
                    r.call,
                    r.loc,
                    "asynchronous copies into shared memory (cp.async, the copy engine) are "
                    "CUDA's, the opencl target has none: build with target='cuda', or drop the "
                    "pipeline (double_buffer() and plain shared stages work on opencl)",
                )
            )


def _refuse_tensor_instructions(s: Schedule, why: str) -> None:
    """A LoweringError saying `why` at the latest tensorize of a stage onto sl.intrin's
    instructions (declared intrinsics, which call C functions, are not these)."""
    from .schedule.errors import message

    for r in (stage.tensorized for stage in s.stages):
        if r is not None and r.intrin.kind != "user":
            call = f"tensorize({r.axis.name}, {r.intrin!r})"
            raise LoweringError(message(r.stage, call, r.loc, why))


def _refuse_c_functions(s: Schedule, target: str) -> None:
    """A declared intrinsic calls a C function, which runs on the CPU: named at its
    tensorize on a GPU target."""
    from .schedule.errors import message

    for r in (stage.tensorized for stage in s.stages):  # the latest tensorize of each stage
        if r is not None and r.intrin.kind == "user":
            raise LoweringError(
                message(
                    r.stage,
                    f"tensorize({r.axis.name}, {r.intrin!r})",
                    r.loc,
                    f"a declared intrinsic calls C functions, which run on the CPU, not on "
                    f"{target}: build with target='cpu' (the GPU's tensor instructions are "
                    "sl.intrin's)",
                )
            )


def _refuse_hardware_indices(s: Schedule) -> None:
    """The cpu target runs no blocks or threads. Named here, at the bind that asked for them: the
    code generator only meets the loops, which passes may have renamed (a cross-thread reduction's
    loop is the pass's own)."""
    from .schedule import records as rec
    from .schedule.errors import message

    for stage in s.stages:
        for axis, tag in stage.binds.items():
            if tag == "vthread":
                continue
            record = s.record_for(rec.Bind, axis)
            instead = (
                "leave the reduce axis unbound (rfactor it to compute its parts in parallel)"
                if axis.kind == "reduce"
                else "use parallel/vectorize on the CPU"
            )
            raise LoweringError(
                message(
                    stage.name,
                    f"bind({axis.name}, {tag})",
                    record.loc,
                    f"'{axis.name}' is bound to {tag}; the cpu target has no threads: build with "
                    f"target='cuda', or {instead}",
                )
            )


def _default_arch() -> str:
    """The GPU's own architecture when the driver sees one, else sm_90 (Hopper). The driver
    alone is asked: whether LLVM can compile for it is the compiler's question, and a build
    loaded from disk needs no compiler (nor LLVM's start-up)."""
    from .codegen.nvptx.arch import DEFAULT_ARCH
    from .platform_info import cuda_devices, probe_cuda

    if probe_cuda().ok:
        return cuda_devices()[0].arch
    return DEFAULT_ARCH
