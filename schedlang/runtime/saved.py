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

from ..codegen.cpu import jit as cpu_jit
from ..codegen.cpu.cache import CompiledCpu
from ..codegen.cpu.module import entry_symbol
from ..codegen.cpu.parallel import PARALLEL_FOR
from ..codegen.nvptx.compile import CompiledCuda
from ..errors import LaunchError

FORMAT = "schedlang saved kernel 1"


def export(kernel: object, path: str | Path) -> None:
    """Write `kernel` (a CPU `Kernel` or a `CudaKernel`) to `path`."""
    from .cuda_kernel import CudaKernel

    if isinstance(kernel, CudaKernel):
        compiled = kernel._compiled
        saved = {
            "format": FORMAT,
            "target": kernel.target,
            "plan": compiled.plan,
            "arch": compiled.arch,
            "ptx": compiled.ptx,
        }
    else:
        compiled = kernel._compiled
        saved = {
            "format": FORMAT,
            "target": kernel.target,
            "lowered": kernel.lowered,
            "host": cpu_jit.host().target.key,
            "llvm_ir": compiled.llvm_ir,
            "object": cpu_jit.object_code(compiled.llvm_ir),
        }
    Path(path).write_bytes(pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL))


def load(path: str | Path) -> object:
    """The kernel saved at `path` by ``kernel.export``."""
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
    if "ptx" in saved:
        from .cuda_kernel import CudaKernel

        compiled = CompiledCuda(saved["plan"], saved["arch"], "", saved["ptx"])
        return CudaKernel(saved["plan"].func, compiled, saved["target"])
    from .kernel import Kernel
    from .parallel import parallel_for_address

    lowered, text = saved["lowered"], saved["llvm_ir"]
    obj = saved["object"]
    if saved["host"] != cpu_jit.host().target.key:  # another CPU: its own machine code
        obj = cpu_jit.object_code(text)
    symbol = entry_symbol(lowered)
    imports = {PARALLEL_FOR: parallel_for_address()}
    linked, address = cpu_jit.link(obj, symbol, imports, text)
    compiled = CompiledCpu(lowered, f"saved {path}", address, linked, text)
    return Kernel(lowered, compiled, saved["target"])
