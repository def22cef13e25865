"""TVM v0.14's own TE unit tests run on schedlang with only their imports changed: how many pass.

    python -m tests.tvm.te_suite PATH [--json] [--only NAME ...]

PATH is a TVM checkout (``tests/python/unittest`` inside) or a git repository holding the tag
v0.14.0 (the test files are read from the tag). The 19 files ``test_te_*.py`` are copied,
unmodified, into a temporary folder beside a package ``tvm`` that is ``schedlang.tvm`` (it and
each of its submodules under the ``tvm.`` name, and nothing more: a TVM module that schedlang
lacks fails to import), with the one line of TVM's own conftest.py that they rely on (its
pytest plugin, ``tvm.testing.plugin``). Each file runs in a pytest process of its own.

A test function counts once: passed when all of its parametrized cases pass, skipped when all
skip (a GPU this machine lacks), xfailed when TVM itself marks it so, not importable when its
file stopped at collection. Each is counted in one category: *IR* and *TE-internal* for the
tests listed below (TVM's IR objects; TE's own passes and analyses), *behaviour* for the rest
(results against numpy, programs accepted or refused, shapes, TE's op and schedule API). Nothing
of TVM is kept in this project: the files are read from PATH when this runs.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from .mirror_run import with_python_path

UNITTEST = "tests/python/unittest"
STATUSES = ("passed", "failed", "not importable", "skipped", "xfailed")
CATEGORIES = ("behaviour", "TE-internal", "IR")

# TE's passes and analyses (InferBound, ScheduleOps, read graphs, schedule records).
TE_INTERNAL = {
    "test_te_schedule_bound_inference": "*",
    "test_te_schedule_bound_inference_tiling": "*",
    "test_te_schedule_graph": "*",
    "test_te_schedule_ops": (
        "test_schedule_scan test_inline_multi_reduce test_auto_inline test_schedule_const_bound "
        "test_schedule_cache test_schedule_middle_cache test_schedule_cache_relayout1 "
        "test_schedule_cache_relayout2 test_schedule_cache_relayout3 "
        "test_schedule_cache_relayout4 test_schedule_tensor_compute1 "
        "test_schedule_tensor_compute2 test_schedule_tensor_compute3 "
        "test_schedule_compute_inline test_schedule_record_gemm test_schedule_record_misc"
    ),
}
# TVM's IR objects: TIR node classes, TVMScript, create_prim_func, JSON of nodes.
IR = {
    "test_te_build_lower": "test_split_uneven_unique_likely",
    "test_te_create_primfunc": "*",
    "test_te_hybrid_script": "test_outer_product test_fanout test_looptype test_schedule",
    "test_te_schedule": (
        "test_schedule_create test_tensor_intrin test_tensor_intrin_scalar_params "
        "test_legalize_invalid_attach"
    ),
    "test_te_schedule_ops": (
        "test_const test_schedule0 test_schedule1 test_schedule2 test_inline_mixed "
        "test_local_stage_predicate test_local_stage_predicate2"
    ),
    "test_te_schedule_tensorize": (
        "test_tensorize_vadd test_tensorize_matmul test_tensorize_tensor_compute_op"
    ),
    "test_te_tag": "test_with",
    "test_te_tensor": (
        "test_tensor_reduce test_tensor_compute1 test_tensor_compute2 test_scan_multi_out "
        "test_tuple_with_different_deps"
    ),
    "test_te_transform_layout": (
        "TestCompareAgainstExplicitReshape::test_internal_reshape "
        "Test2DPhysicalLayout::test_2d_physical TestTransformedSchedules::test_tir_loop_order "
        "TestTransformedSchedules::test_te_loop_order "
        "TestTransformedSchedules::test_use_transformed_axes"
    ),
    "test_te_verify_compute": "test_verify_compute",
}

# TVM's own conftest.py at the root of its tree loads its pytest plugin (fixtures `target`, `dev`).
CONFTEST = 'pytest_plugins = ["tvm.testing.plugin"]\n'

SHIM = '''"""`tvm` is schedlang.tvm: it and each of its submodules, under the names `tvm.*`."""
import importlib
import pkgutil
import sys

import schedlang.tvm as _tvm

for _info in pkgutil.walk_packages(_tvm.__path__, prefix="schedlang.tvm."):
    _module = importlib.import_module(_info.name)
    sys.modules["tvm." + _info.name[len("schedlang.tvm."):]] = _module
sys.modules[__name__] = _tvm
'''


def test_files(path: str, into: Path) -> list[Path]:
    """TVM's ``test_te_*.py`` from the checkout or git repository `path`, copied into `into`."""
    folder = Path(path) / UNITTEST
    if folder.is_dir():
        sources = {p.name: p.read_text() for p in sorted(folder.glob("test_te_*.py"))}
    else:
        listing = subprocess.run(
            ["git", f"--git-dir={path}", "ls-tree", "--name-only", f"v0.14.0:{UNITTEST}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        sources = {
            name: subprocess.run(
                ["git", f"--git-dir={path}", "show", f"v0.14.0:{UNITTEST}/{name}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for name in sorted(listing)
            if re.fullmatch(r"test_te_.*\.py", name)
        }
    if not sources:
        raise SystemExit(f"{path}: no {UNITTEST}/test_te_*.py here, nor at tag v0.14.0")
    tests = into / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(CONFTEST)
    for name, text in sources.items():
        (tests / name).write_text(text)
    return sorted(tests.glob("test_te_*.py"))


def functions(source: str) -> list[str]:
    """The test functions of a file: ``test_*`` at the top and ``Test*::test_*`` in classes."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names += [
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test")
            ]
    return names


def category(file: str, test: str) -> str:
    for name, table in (("TE-internal", TE_INTERNAL), ("IR", IR)):
        listed = table.get(file, "")
        if listed == "*" or test in listed.split():
            return name
    return "behaviour"


def run_file(path: Path, shim: Path, root: Path) -> dict[str, tuple[str, float]]:
    """Each test function of the file `path` -> its status (see the module) and the seconds
    of its longest case, builds included: a bound on the longest build of the test."""
    report = path.with_suffix(".xml")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        command.append("--timeout=300")
    subprocess.run(
        [*command, f"--junitxml={report}", str(path)],
        cwd=path.parent.parent,
        env=with_python_path(shim, root),
        capture_output=True,
        timeout=1800,
        check=False,
    )
    cases: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase") if report.exists() else ():
        name = re.sub(r"\[.*", "", case.get("name", ""))
        owner = case.get("classname", "").split(".")[-1]
        key = f"{owner}::{name}" if owner.startswith("Test") else name
        cases.setdefault(key, []).append(_status(case))
        seconds[key] = max(seconds.get(key, 0.0), float(case.get("time") or 0.0))
    statuses = {}
    for test in functions(path.read_text()):
        got = cases.get(test)
        if not got:
            statuses[test] = "not importable"
        elif "failed" in got:
            statuses[test] = "failed"
        elif all(s == "skipped" for s in got):
            statuses[test] = "skipped"
        elif "xfailed" in got:
            statuses[test] = "xfailed"
        else:
            statuses[test] = "passed"
    return {test: (status, seconds.get(test, 0.0)) for test, status in statuses.items()}


def _status(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed"
        if child.tag == "skipped":
            kind = (child.get("type") or "") + (child.get("message") or "")
            return "xfailed" if "xfail" in kind else "skipped"
    return "passed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a TVM checkout, or a git repository with tag v0.14.0")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--only", nargs="*", default=(), help="run only these files (test_te_x)")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    work = Path(tempfile.mkdtemp(prefix="te-suite-v0.14-"))
    (work / "shim" / "tvm").mkdir(parents=True)
    (work / "shim" / "tvm" / "__init__.py").write_text(SHIM)
    results = {}
    for path in test_files(args.path, work):
        if args.only and path.stem not in args.only:
            continue
        for test, (status, seconds) in run_file(path, work / "shim", root).items():
            results[f"{path.stem}::{test}"] = {
                "status": status,
                "category": category(path.stem, test),
                "seconds": round(seconds, 2),
            }
    if args.json:
        print(json.dumps({"results": results}))
        return 0
    _print(results)
    return 0


def _print(results: dict) -> None:
    files = sorted({key.split("::")[0] for key in results})
    print(f"{'file':48} {'tests':>5} " + " ".join(f"{s:>14}" for s in STATUSES))
    for file in files:
        mine = [r for key, r in results.items() if key.split("::")[0] == file]
        print(_row(file, mine))
    print()
    print(f"{'category':48} {'tests':>5} " + " ".join(f"{s:>14}" for s in STATUSES))
    for name in CATEGORIES:
        print(_row(name, [r for r in results.values() if r["category"] == name]))
    print(_row("all", list(results.values())))
    slowest = sorted(results.items(), key=lambda item: -item[1]["seconds"])[:3]
    print("\nslowest (seconds of a test's longest case, builds included):")
    for key, r in slowest:
        print(f"  {r['seconds']:8.2f}  {key}")


def _row(label: str, rows: list[dict]) -> str:
    count = Counter(r["status"] for r in rows)
    return f"{label:48} {len(rows):>5} " + " ".join(f"{count[s]:>14}" for s in STATUSES)


if __name__ == "__main__":
    sys.exit(main())
