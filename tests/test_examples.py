"""The example schedules under examples/: right on odd sizes, and the GPU ones lean in PTX."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm
from schedlang.loopir.interpret import run
from tests.cuda.ptxas import assemble


def test_gpu_gemm_at_small_tiles_matches_the_reference():
    """The GEMM schedule with its tiles shrunk (so the interpreter is quick), at sizes that
    divide none of them."""
    at, b, c = gpu_gemm.gemm(37, 45, 19)
    s = gpu_gemm.schedule(at, b, c, block=16, threads=4, vthreads=2, step=4)
    kernel = sl.build(s, [at, b, c], target="cuda")
    rng = np.random.default_rng(3)
    a_np = rng.uniform(0.5, 2.0, (19, 37)).astype(np.float32)
    b_np = rng.uniform(-2.0, -0.5, (19, 45)).astype(np.float32)
    out = np.full((37, 45), np.nan, np.float32)
    run(kernel.lowered, [a_np, b_np, out])
    np.testing.assert_allclose(out, a_np.T @ b_np, rtol=1e-5)


@pytest.mark.parametrize("size", [4096, 4000])
def test_gpu_gemm_keeps_its_tile_in_registers(size):
    kernel = gpu_gemm.build(size, size, size)
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert report.registers <= 128, report.log
    assert "ld.shared.v4" in kernel.ptx and "ld.shared.b32" not in kernel.ptx
    assert "ld.global.nc.v4" in kernel.ptx
