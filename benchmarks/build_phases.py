"""The steps of a CUDA `sl.build`, run one at a time as it runs them, each timed: what a
compile-time benchmark reports (`compile_time.py`, `attention.py --build-time`). The PTX they
make is returned for the caller to check against `sl.build`'s."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from schedlang.codegen.llvm.text import module_text
from schedlang.codegen.nvptx.compile import _for_products, _ptx, machine
from schedlang.codegen.nvptx.module import build_module
from schedlang.codegen.nvptx.plan import plan_kernels
from schedlang.collector import paused
from schedlang.driver import lower_for_gpu
from schedlang.loopir.gpu.passes import gpu_passes
from schedlang.loopir.intrin.lowering import apply_lowering_rules


def gpu_build_phases(s, args, arch: str, min_blocks: int = 0) -> tuple[dict[str, float], str]:
    """Seconds per step of the build of `s` over `args` for `arch` (without `sl.build`'s cache
    key), and its PTX."""
    times = {}
    with paused():
        start = time.perf_counter()
        func = apply_lowering_rules(lower_for_gpu(s, args), "cuda")
        times["lowering (isl placement and AST, loop-IR passes)"] = time.perf_counter() - start
        start = time.perf_counter()
        func = gpu_passes(func)
        times["GPU loop-IR passes (registers, unrolling, tiles)"] = time.perf_counter() - start
        start = time.perf_counter()
        plan = plan_kernels(func)
        arch = _for_products(plan, arch)
        tm = machine(arch)
        text = module_text(build_module(plan, arch, str(tm.target_data), min_blocks))
        times[f"LLVM IR generation ({len(text) // 1000} kB)"] = time.perf_counter() - start
        start = time.perf_counter()
        ptx = _ptx(text, [k.name for k in plan.kernels], tm)
        times["LLVM -O3 and PTX emission"] = time.perf_counter() - start
    return times, ptx


def ptxas_seconds(ptx: str) -> float | None:
    """Seconds NVIDIA's ptxas takes to assemble `ptx` for its own ``.target`` (what loading a
    kernel costs where the disk cache assembles it, about what the driver takes without it);
    None where ptxas is missing."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    arch = next(line.split()[1] for line in ptx.splitlines() if line.startswith(".target"))
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        start = time.perf_counter()
        subprocess.run(
            [ptxas, f"-arch={arch}", str(source), "-o", str(Path(folder) / "kernel.cubin")],
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - start
