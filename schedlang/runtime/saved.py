"""Saved kernels: ``kernel.export(path)`` and ``sl.load(path)`` (TE's ``export_library`` and
``load_module``), for a process that never saw the algorithm or the schedule.

A file holds what a kernel is made of after compilation and nothing it was made from: the
lowered function (its parameters, sizes and loop nest, which the argument checks, the launch
and `simulate` read), and for the CPU the object code of the host it was built on (with the
LLVM IR, compiled again where the loading host's CPU is another), for CUDA the PTX and the
launch plan, for OpenCL the source and the launch plan. Loading links the object code or hands
the PTX (the source) to the driver (the OpenCL compiler) on the first call: no lowering, no
LLVM.

The file is sealed (`codegen.sealed`: a mark, the format's version, the length and SHA-256 of
what follows), and checked before anything in it is unpickled or run: a file damaged on disk,
cut short, of another format or not schedlang's at all is a LaunchError that names the file and
says which, never machine code run as it is. The body is a pickle: load only files you trust,
as with ``torch.load`` (the checksum finds damage, not a forger).
"""

from __future__ import annotations

import pickle
from pathlib import Path

from ..codegen import sealed
from ..errors import LaunchError

MARK = b"SLKERNEL"
# 5: the loop IR's classes moved to sub-packages (pickles name them); 4: lowered functions hold
# their call-time checks; 3: sealed; 2: bare pickles
VERSION = 5
FORMAT = f"schedlang saved kernel {VERSION}"  # also the entries of `build_cache`

_UNSEALED = {
    sealed.FOREIGN: "is not a kernel saved by schedlang (it does not start as kernel.export "
    "writes files; files exported by a schedlang older than format 3 must be exported again)",
    sealed.TRUNCATED: "is cut short: it is a kernel saved by schedlang missing its end (a full "
    "disk or a copy stopped early); export the kernel again",
    sealed.DAMAGED: "is damaged: its checksum does not match its contents, so it was changed "
    "after kernel.export wrote it; export the kernel again",
    sealed.MISPLACED: "is damaged: it is not the body kernel.export wrote; export the kernel again",
}


def export(kernel: object, path: str | Path) -> None:
    """Write `kernel` (a CPU `Kernel`, a `CudaKernel` or an `OpenCLKernel`) to `path`."""
    body = pickle.dumps(contents(kernel), protocol=pickle.HIGHEST_PROTOCOL)
    Path(path).write_bytes(sealed.seal(MARK, VERSION, "", body))


def load(path: str | Path) -> object:
    """The kernel saved at `path` by ``kernel.export``."""
    return revive(read(path), f"saved {path}")


def read(path: str | Path) -> dict:
    """The contents saved at `path` (what `revive` takes); a LaunchError where `path` holds
    no kernel saved by this version of schedlang, intact."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise LaunchError(f"cannot read the saved kernel {path}: {error.strerror}") from None
    try:
        body = sealed.unseal(MARK, VERSION, "", data)
    except sealed.Unsealed as error:
        if error.reason == sealed.VERSION:
            raise LaunchError(
                f"{path} is a kernel saved by another version of schedlang (format "
                f"{error.found}, this one reads {VERSION}); export it again with this version"
            ) from None
        raise LaunchError(f"{path} {_UNSEALED[error.reason]}") from None
    try:
        saved = pickle.loads(body)
    except Exception as error:  # intact but not ours: written by hand with our mark
        raise LaunchError(f"{path} is not a kernel saved by schedlang ({error})") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise LaunchError(f"{path} is not a kernel saved by schedlang (no kernel inside)")
    return saved


def contents(kernel: object) -> dict:
    """What `revive` makes `kernel` again from, as picklable values."""
    from .cuda.kernel import CudaKernel
    from .opencl.kernel import OpenCLKernel

    if isinstance(kernel, OpenCLKernel):
        return {"format": FORMAT, "target": kernel.target, "opencl": kernel.program}
    compiled = kernel._compiled
    if isinstance(kernel, CudaKernel):
        return {
            "format": FORMAT,
            "target": kernel.target,
            "plan": compiled.plan,
            "arch": compiled.arch,
            "llvm_ir": compiled.llvm_ir,
            "ptx": compiled.ptx,
        }
    from ..codegen.cpu import jit as cpu_jit

    return {
        "format": FORMAT,
        "target": kernel.target,
        "lowered": kernel.lowered,
        "host": cpu_jit.host().key,
        "llvm_ir": compiled.llvm_ir,
        "object": compiled.object_code,
    }


def revive(saved: dict, origin: str) -> object:
    """The kernel of `contents`; `origin` says where it came from (in its compile key)."""
    if "opencl" in saved:
        from .opencl.kernel import OpenCLKernel

        program = saved["opencl"]
        return OpenCLKernel(program.plan.func, program, saved["target"])
    if "ptx" in saved:
        from ..codegen.nvptx.compiled import CompiledCuda
        from .cuda.kernel import CudaKernel

        plan = saved["plan"]
        compiled = CompiledCuda(plan, saved["arch"], saved["llvm_ir"], saved["ptx"])
        return CudaKernel(plan.func, compiled, saved["target"])
    from ..codegen.cpu import linker
    from ..codegen.cpu.compiled import CompiledCpu, entry_symbol
    from ..codegen.cpu.host_key import host_key
    from .kernel import Kernel
    from .parallel import runtime_imports

    lowered, text = saved["lowered"], saved["llvm_ir"]
    obj = saved["object"]
    if saved["host"] != host_key():  # another CPU: its own machine code
        from ..codegen.cpu import jit as cpu_jit

        obj = cpu_jit.object_code(text)
    symbol = entry_symbol(lowered)
    linked, address = linker.link(obj, symbol, runtime_imports(lowered), text)
    compiled = CompiledCpu(lowered, origin, address, linked, text, obj)
    return Kernel(lowered, compiled, saved["target"])
