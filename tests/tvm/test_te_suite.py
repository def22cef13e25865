"""TVM v0.14's own TE unit tests with their imports changed: at least as many pass as
docs/coming-from-te.md records. Runs only where SCHEDLANG_TVM_MIRROR names a TVM checkout or
git repository (see `te_suite`)."""

from __future__ import annotations

import os

import pytest

from .mirror_run import run_json, with_python_path

MIRROR = os.environ.get("SCHEDLANG_TVM_MIRROR")
# docs/coming-from-te.md, "What TVM's TE tests check that schedlang does not"
RECORDED = {"behaviour": 63, "TE-internal": 27, "IR": 7}


@pytest.mark.skipif(not MIRROR, reason="SCHEDLANG_TVM_MIRROR does not name a TVM checkout")
def test_te_unit_tests_of_tvm_pass_on_schedlang():
    results = run_json("tests.tvm.te_suite", MIRROR, timeout=3600)["results"]
    assert len(results) == 171
    for name, recorded in RECORDED.items():
        mine = {k: r["status"] for k, r in results.items() if r["category"] == name}
        passed = [k for k, status in mine.items() if status == "passed"]
        assert len(passed) >= recorded, (name, sorted(passed))


def test_the_suites_processes_keep_the_callers_module_path(monkeypatch):
    """The suite's pytest runs (and the mirror's) put the shim and the repository first and
    keep the caller's PYTHONPATH after them: a machine that installs packages by path (islpy
    in a folder of wheels) must find them in the child too, where every test was otherwise
    'not importable'."""
    monkeypatch.setenv("PYTHONPATH", "/opt/site")
    env = with_python_path("/shim", "/repo")
    assert env["PYTHONPATH"] == os.pathsep.join(["/shim", "/repo", "/opt/site"])
    monkeypatch.delenv("PYTHONPATH")
    assert with_python_path("/repo")["PYTHONPATH"] == "/repo"
