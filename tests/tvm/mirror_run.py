"""Running a measurement against a TVM checkout (`topi_mirror`, `te_suite`) from a test: in a
process of its own, since each replaces ``tvm`` in ``sys.modules``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def with_python_path(*folders: Path | str) -> dict[str, str]:
    """This process's environment with `folders` first on the child's module path, before the
    caller's own PYTHONPATH (where an environment installs packages by path, as a machine
    without an installer does)."""
    paths = [str(f) for f in folders]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_json(module: str, mirror: str, timeout: int, options: tuple[str, ...] = ()) -> dict:
    """``python -m <module> <mirror> <options> --json``, run from the repository root; its
    JSON."""
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-m", module, mirror, *options, "--json"],
        cwd=root,
        env=with_python_path(root),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(run.stdout.splitlines()[-1])
