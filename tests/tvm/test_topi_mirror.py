"""TVM v0.14's own TOPI Python files (computes, x86, generic and CUDA schedules) on schedlang:
at least as many of the 29 operators match numpy as docs/coming-from-te.md records. Runs only
where SCHEDLANG_TVM_MIRROR names a TVM checkout or git repository (see `topi_mirror`); the
CUDA schedules run assembled by ptxas and simulated everywhere, and on the GPU where one is."""

from __future__ import annotations

import os

import pytest

from .mirror_run import run_json

MIRROR = os.environ.get("SCHEDLANG_TVM_MIRROR")
# docs/coming-from-te.md, "TOPI's own Python files"
RECORDED = {"x86": 27, "generic": 28, "cuda": 26}
needs_mirror = pytest.mark.skipif(
    not MIRROR, reason="SCHEDLANG_TVM_MIRROR does not name a TVM checkout"
)


def _check(results: dict, routes: tuple[str, ...]) -> None:
    assert len(results) == 29
    for route in routes:
        failures = {name: r[route] for name, r in results.items() if r[route] != "match"}
        assert 29 - len(failures) >= RECORDED[route], failures


@needs_mirror
def test_topi_own_python_files_run_on_schedlang():
    _check(run_json("tests.tvm.topi_mirror", MIRROR, timeout=900)["results"], ("x86", "generic"))


@needs_mirror
def test_topi_cuda_schedules_assemble_and_match_in_the_simulator():
    run = run_json("tests.tvm.topi_mirror", MIRROR, 900, ("--target", "cuda", "--simulate"))
    assert run["mode"] == "ptxas+simulator"
    _check(run["results"], ("cuda",))


@needs_mirror
@pytest.mark.gpu
def test_topi_cuda_schedules_run_on_the_gpu():
    run = run_json("tests.tvm.topi_mirror", MIRROR, timeout=900, options=("--target", "cuda"))
    assert run["mode"] == "gpu"
    _check(run["results"], ("cuda",))
