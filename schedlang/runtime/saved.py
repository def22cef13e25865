"""Saved kernels: ``kernel.export(path)`` and ``sl.load(path)`` (TE's ``export_library`` and
``load_module``), for a process that never saw the algorithm or the schedule.

A file holds what a kernel is made of after compilation and nothing it was made from: the
lowered function (its parameters, sizes and loop nest, which the argument checks, the launch
and `simulate` read), and for the CPU the object code of the host it was built on (with the
LLVM IR, compiled again where the loading host's CPU is another), for CUDA the PTX and the
launch plan. Loading links the object code or hands the PTX to the driver on the first call:
no lowering, no LLVM. The file is a pickle: load only files you trust, as with ``torch.load``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from ..codegen.nvptx.compiled import CompiledCuda
from ..errors import LaunchError

FORMAT = "schedlang saved kernel 3"


def export(kernel: object, path: str | Path) -> None:
    """Write `kernel` (a CPU `Kernel` or a `CudaKernel`) to `path`."""
    Path(path).write_bytes(pickle.dumps(contents(kernel), protocol=pickle.HIGHEST_PROTOCOL))


def load(path: str | Path) -> object:
    """The kernel saved at `path` by ``kernel.export``."""
    return revive(read(path), f"saved {path}")


def read(path: str | Path) -> dict:
    """The contents saved at `path` (what `revive` takes); a LaunchError where `path` holds
    no kernel saved by this version of schedlang."""
    try:
        saved = pickle.loads(Path(path).read_bytes())
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as error:
        raise LaunchError(f"{path} is not a kernel saved by schedlang ({error})") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise LaunchError(
            f"{path} is not a kernel saved by this version of schedlang (format "
            f"{saved.get('format') if isinstance(saved, dict) else None!r}, expected "
            f"{FORMAT!r}); export it again"
        )
    return saved


def contents(kernel: object) -> dict:
    """What `revive` makes `kernel` again from, as picklable values."""
    from .cuda_kernel import CudaKernel

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
        "host": cpu_jit.host().target.key,
        "llvm_ir": compiled.llvm_ir,
        "object": compiled.object_code,
    }


def revive(saved: dict, origin: str) -> object:
    """The kernel of `contents`; `origin` says where it came from (in its compile key)."""
    if "ptx" in saved:
        from .cuda_kernel import CudaKernel

        plan = saved["plan"]
        compiled = CompiledCuda(plan, saved["arch"], saved["llvm_ir"], saved["ptx"])
        return CudaKernel(plan.func, compiled, saved["target"])
    from ..codegen.cpu import jit as cpu_jit
    from ..codegen.cpu.cache import CompiledCpu
    from ..codegen.cpu.module import entry_symbol
    from ..codegen.cpu.parallel import PARALLEL_FOR
    from .kernel import Kernel
    from .parallel import parallel_for_address

    lowered, text = saved["lowered"], saved["llvm_ir"]
    obj = saved["object"]
    if saved["host"] != cpu_jit.host().target.key:  # another CPU: its own machine code
        obj = cpu_jit.object_code(text)
    symbol = entry_symbol(lowered)
    imports = {PARALLEL_FOR: parallel_for_address()}
    linked, address = cpu_jit.link(obj, symbol, imports, text)
    compiled = CompiledCpu(lowered, origin, address, linked, text, obj)
    return Kernel(lowered, compiled, saved["target"])
