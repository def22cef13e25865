"""The import direction of DESIGN.md's pipeline, checked on the source rather than trusted.

Stage folders come in pipeline order; a module may import from its own stage and earlier ones,
plus the base modules, which import no stage at all. Top-level modules (`driver.py`, `cli.py`,
the package `__init__`) and folders outside the pipeline may import anything, but no stage may
import them. The heavy engines stay behind their stage: islpy in `poly/`, llvmlite in
`codegen/`, cuda-python and pyopencl in `runtime/` (all but islpy also in the platform
probe). Imports inside
functions and under `TYPE_CHECKING` count: they still tie the layers together.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import pytest

PACKAGE = "schedlang"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE
STAGES = ("ir", "schedule", "poly", "loopir", "codegen", "runtime")
BASE_MODULES = ("errors", "htmlkit", "platform_info")
TOP_LEVEL = len(STAGES)  # the rank of top-level modules: after every stage

# Where each third-party engine may be imported: (stage folder or None for top level, file glob).
ENGINE_HOMES = {
    "islpy": [("poly", "*.py"), ("loopir", "from_isl*.py"), ("loopir", "isl_ast*.py")],
    "llvmlite": [("codegen", "*.py"), (None, "platform_info.py")],
    "cuda": [("runtime", "*.py"), (None, "platform_info.py")],
    "pyopencl": [("runtime", "*.py"), (None, "platform_info.py")],
}


@dataclass(frozen=True)
class Import:
    module: str  # the dotted name of the importing module
    path: Path
    line: int
    target: str  # the dotted name it imports, resolved


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    relative = Path(*dotted.split("."))
    root = PACKAGE_DIR.parent
    return (root / relative).with_suffix(".py").is_file() or (root / relative).is_dir()


def _imports(path: Path) -> list[Import]:
    module = _module_name(path)
    return _imports_in(path.read_text(), module, path.name == "__init__.py", path)


def _imports_in(source: str, module: str, is_package: bool, path: Path) -> list[Import]:
    """Every import in `source`, with relative imports resolved against the module's package."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = [_from_target(node, package, alias.name) for alias in node.names]
        else:
            continue
        found.extend(Import(module, path, node.lineno, target) for target in targets)
    return found


def _from_target(node: ast.ImportFrom, package: str, name: str) -> str:
    """What `from <node.module> import <name>` imports: the submodule when there is one."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    submodule = f"{base}.{name}"
    if base.split(".")[0] == PACKAGE and _is_module(submodule):
        return submodule
    return base


def _rank(dotted: str) -> int | None:
    """The pipeline position of a schedlang module; None for a base module."""
    parts = dotted.split(".")
    if len(parts) < 2:
        return TOP_LEVEL  # the package itself: importing it imports every stage
    if parts[1] in BASE_MODULES:
        return None
    if parts[1] in STAGES:
        return STAGES.index(parts[1])
    return TOP_LEVEL


def _all_imports() -> list[Import]:
    return [imp for path in sorted(PACKAGE_DIR.rglob("*.py")) for imp in _imports(path)]


def _where(imp: Import) -> str:
    return f"{imp.path.relative_to(PACKAGE_DIR.parent)}:{imp.line}: imports {imp.target}"


def test_the_checker_resolves_relative_and_local_imports():
    # Guards the checker itself: each spelling of an import from a later stage is seen.
    source = textwrap.dedent(
        """
        from .. import errors
        from ..runtime import launch
        from . import expr
        import llvmlite.ir as ll
        def f():
            from ..codegen.cpu import build
        """
    )
    path = PACKAGE_DIR / "ir" / "example.py"
    imports = _imports_in(source, "schedlang.ir.example", False, path)
    targets = [imp.target for imp in imports]
    assert targets == [
        "schedlang.errors",
        "schedlang.runtime",
        "schedlang.ir.expr",
        "llvmlite.ir",
        "schedlang.codegen.cpu",
    ]
    assert [_rank(t) for t in targets if t.startswith(PACKAGE)] == [None, 5, 0, 4]
    assert [imp.line for imp in imports] == [2, 3, 4, 5, 7]


def test_stages_import_only_earlier_stages():
    violations = []
    for imp in _all_imports():
        if imp.target.split(".")[0] != PACKAGE:
            continue
        own = _rank(imp.module)
        if own is None:
            if _rank(imp.target) is not None:
                violations.append(f"{_where(imp)} (base modules import no stage)")
            continue
        if own == TOP_LEVEL:
            continue
        target = _rank(imp.target)
        if target is not None and target > own:
            what = "a top-level module" if target == TOP_LEVEL else f"stage '{STAGES[target]}'"
            violations.append(f"{_where(imp)} ({what} comes after stage '{STAGES[own]}')")
    assert not violations, "imports against the pipeline direction:\n" + "\n".join(violations)


def _engine_allowed(engine: str, path: Path) -> bool:
    relative = path.relative_to(PACKAGE_DIR)
    folder = relative.parts[0] if len(relative.parts) > 1 else None
    return any(
        folder == home and fnmatch(path.name, pattern) for home, pattern in ENGINE_HOMES[engine]
    )


def test_engines_stay_in_their_stage():
    violations = []
    for imp in _all_imports():
        engine = imp.target.split(".")[0]
        if engine in ENGINE_HOMES and not _engine_allowed(engine, imp.path):
            homes = ", ".join(f"{h or PACKAGE}/{p}" for h, p in ENGINE_HOMES[engine])
            violations.append(f"{_where(imp)} ({engine} belongs in {homes})")
    assert not violations, "engines imported outside their stage:\n" + "\n".join(violations)


@pytest.mark.parametrize("engine", sorted(ENGINE_HOMES))
def test_engine_rule_matches_expected_paths(engine):
    homes = {"islpy": "poly", "llvmlite": "codegen", "cuda": "runtime", "pyopencl": "runtime"}
    home_folder = homes[engine]
    assert _engine_allowed(engine, PACKAGE_DIR / home_folder / "anything.py")
    assert not _engine_allowed(engine, PACKAGE_DIR / "ir" / "anything.py")
    assert not _engine_allowed(engine, PACKAGE_DIR / "driver.py")


def test_import_schedlang_is_light_and_fast():
    code = textwrap.dedent(
        """
        import json, sys, time
        start = time.perf_counter()
        import schedlang
        seconds = time.perf_counter() - start
        heavy = sorted({m.split(".")[0] for m in sys.modules} & {"llvmlite", "cuda", "pyopencl"})
        print(json.dumps({"seconds": seconds, "heavy": heavy}))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PACKAGE_DIR.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["heavy"] == [], f"import schedlang pulls in {result['heavy']}"
    assert result["seconds"] < 1.5, f"import schedlang took {result['seconds']:.2f} s"
