"""TVM v0.14's own TOPI Python files (computes, x86 and generic schedules) on schedlang: at
least as many of the 29 operators match numpy as docs/coming-from-te.md records. Runs only
where SCHEDLANG_TVM_MIRROR names a TVM checkout or git repository (see `topi_mirror`)."""

from __future__ import annotations

import os

import pytest

from .mirror_run import run_json

MIRROR = os.environ.get("SCHEDLANG_TVM_MIRROR")
RECORDED = {"x86": 27, "generic": 28}  # docs/coming-from-te.md, "TOPI's own Python files"


@pytest.mark.skipif(not MIRROR, reason="SCHEDLANG_TVM_MIRROR does not name a TVM checkout")
def test_topi_own_python_files_run_on_schedlang():
    results = run_json("tests.tvm.topi_mirror", MIRROR, timeout=900)["results"]
    assert len(results) == 29
    for route, recorded in RECORDED.items():
        failures = {name: r[route] for name, r in results.items() if r[route] != "match"}
        assert 29 - len(failures) >= recorded, failures
