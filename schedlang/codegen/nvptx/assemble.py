"""PTX assembled to a cubin by NVIDIA's ptxas, in a process that has no GPU of its own.

A process that loads PTX has the driver compile it, on the thread that loads it: for a GEMM,
a tenth of a second. A tuner loads hundreds of kernels in the one process that measures them,
so its compile processes assemble each kernel's PTX themselves, in parallel, and hand over the
cubin (`runtime.cuda.driver.offer_cubin`). Where ptxas is not installed the driver compiles
the PTX as usual.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path


def assemble(ptx: str, arch: str) -> bytes | None:
    """The cubin of `ptx` for `arch`; None where ptxas is missing or refuses it (the driver
    then compiles the PTX, and says what is wrong with it if anything is)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    with tempfile.TemporaryDirectory(prefix="schedlang-ptxas-") as folder:
        source, cubin = Path(folder) / "kernel.ptx", Path(folder) / "kernel.cubin"
        source.write_text(ptx)
        done = subprocess.run(
            [ptxas, f"-arch={arch}", str(source), "-o", str(cubin)],
            capture_output=True,
            check=False,
        )
        return cubin.read_bytes() if done.returncode == 0 and cubin.exists() else None
