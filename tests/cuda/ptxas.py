"""Running NVIDIA's ptxas on generated PTX: the offline check that the PTX is valid."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class PtxasReport:
    """What ``ptxas -v`` says about each kernel, summed over the kernels of a module."""

    stack_bytes: int
    spill_bytes: int
    shared_bytes: int
    registers: int
    log: str


def assemble(ptx: str, arch: str | None = None) -> PtxasReport:
    """Assemble `ptx` for `arch` (by default the PTX's own ``.target``; the test is skipped
    where ptxas is missing); fails the test with ptxas's messages when it rejects the PTX."""
    if arch is None:
        found = re.search(r"^\.target (sm_\w+)", ptx, re.MULTILINE)
        arch = found.group(1) if found else "sm_90"
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not on PATH (install a CUDA toolkit or nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        done = subprocess.run(
            [ptxas, f"-arch={arch}", "-v", str(source), "-o", str(Path(folder) / "kernel.cubin")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"ptxas rejected the PTX:\n{log}\n{ptx}"
    return PtxasReport(
        stack_bytes=_total(r"(\d+) bytes stack frame", log),
        spill_bytes=_total(r"(\d+) bytes spill stores", log)
        + _total(r"(\d+) bytes spill loads", log),
        shared_bytes=_total(r"(\d+) bytes smem", log),
        registers=max((int(n) for n in re.findall(r"Used (\d+) registers", log)), default=0),
        log=log,
    )


def _total(pattern: str, log: str) -> int:
    return sum(int(n) for n in re.findall(pattern, log))


def releases_in_flight(ptx: str, pending: int = 0) -> list[int]:
    """The lines of `ptx` (in text order, which is the order of a loop body without branches
    between its products and its barriers) where a thread arrives on a memory barrier without
    expecting bytes (a consumer's release of a stage) while more than `pending` groups of the
    warpgroup products it issued have not been waited for: the products may still read the
    stage the arrival frees. (Which stage a group reads is not in the text: where a release
    may leave the newest group running, the caller checks that it reads another stage.)"""
    groups, issued, found = 0, False, []
    for number, line in enumerate(ptx.splitlines(), 1):
        if "wgmma.mma_async" in line:
            issued = True
        elif "wgmma.commit_group" in line:
            groups, issued = groups + 1, False
        elif "wgmma.wait_group.sync.aligned" in line:
            groups = min(groups, int(line.split("aligned")[1].strip(" ;")))
            issued = False  # a wait commits nothing: products before it were committed
        elif "mbarrier.arrive" in line and "expect_tx" not in line and (issued or groups > pending):
            found.append(number)
    return found
