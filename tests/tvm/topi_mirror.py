"""TVM v0.14's own TOPI Python files run on schedlang: how many of 29 operators match numpy.

    python -m tests.tvm.topi_mirror PATH [--target cpu|cuda] [--simulate] [--json]

PATH is a TVM checkout (``python/tvm/topi`` inside) or a git repository holding the tag
v0.14.0 (its ``python/tvm/topi`` is exported to a temporary folder). Nothing of TVM is copied
into this project: TOPI's files are read from PATH when this runs.

``tvm`` and its submodules are ``schedlang.tvm``'s (as a TE program sees them with its imports
changed), except ``tvm.topi``: that is TOPI's own Python package, loaded from PATH, whose C++
half (``tvm.topi.cpp``, ``tvm.topi._ffi_api``) is schedlang's TOPI. A package's ``__init__``
runs statement by statement, so one module that needs a TVM name schedlang lacks does not hide
the others; the statements that failed are listed. ``tvm.relay`` and ``tvm.auto_scheduler``,
which are not TE and which TOPI's files import for functions these operators never call
(legalization, auto-scheduler layouts), are empty modules. Each operator is built with TOPI's
compute and TOPI's x86 schedule (the one TVM's x86 strategy picks) and, separately, TOPI's generic
schedule, run on the CPU, and compared with numpy (TOPI's own ``tvm.topi.testing`` references
where it has one). With ``--target cuda`` each is built with TOPI's CUDA compute and schedule
instead, the ones TVM's CUDA strategy picks (`topi_mirror_cuda`), and run on the GPU, or where
there is none (or with ``--simulate``) assembled by ptxas and run in schedlang's CUDA
simulator. It runs in a process of its own, since it replaces ``tvm`` in
``sys.modules``; ``test_topi_mirror.py`` runs it when SCHEDLANG_TVM_MIRROR is set.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.abc
import importlib.util
import json
import pkgutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import schedlang.tvm as sl_tvm
from schedlang.tvm import topi as native

from .topi_mirror_cuda import cuda_mode, measure_cuda
from .topi_mirror_operators import OPERATORS, Operators, measure, reason


def topi_sources(path: str) -> Path:
    """The folder of TOPI's Python package in the TVM checkout or git repository `path`."""
    checkout = Path(path) / "python" / "tvm" / "topi"
    if checkout.is_dir():
        return checkout
    target = Path(tempfile.mkdtemp(prefix="topi-v0.14-"))
    archive = subprocess.run(
        ["git", f"--git-dir={path}", "archive", "refs/tags/v0.14.0", "python/tvm/topi"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "python" / "tvm" / "topi"


IMPORT_FAILURES: list[str] = []


class _TopiLoader(importlib.abc.Loader):
    """Loads TOPI's files; a package's ``__init__`` statement by statement."""

    def __init__(self, path: Path, package: bool) -> None:
        self.path = path
        self.package = package

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        source = self.path.read_text()
        if not self.package:
            exec(compile(source, str(self.path), "exec"), module.__dict__)
            return
        for statement in ast.parse(source).body:
            code = compile(ast.Module([statement], []), str(self.path), "exec")
            try:
                exec(code, module.__dict__)
            except Exception as error:  # noqa: BLE001 - recorded, as the measurement's result
                line = ast.get_source_segment(source, statement).splitlines()[0]
                IMPORT_FAILURES.append(f"{module.__name__}: `{line}`: {reason(error)}")


class _TopiFinder(importlib.abc.MetaPathFinder):
    """``tvm.topi.*`` from TOPI's files, except its C++ half (already in ``sys.modules``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if parts[:2] != ["tvm", "topi"]:
            return None
        base = self.root.joinpath(*parts[2:])
        if (base / "__init__.py").is_file():
            loader = _TopiLoader(base / "__init__.py", package=True)
            spec = importlib.util.spec_from_loader(fullname, loader, is_package=True)
            spec.submodule_search_locations = [str(base)]
            return spec
        if base.with_suffix(".py").is_file():
            return importlib.util.spec_from_loader(
                fullname, _TopiLoader(base.with_suffix(".py"), package=False)
            )
        return None


_POOL_TYPES = {0: "avg", 1: "max"}


def _cpp_half() -> tuple[types.ModuleType, types.ModuleType]:
    """``tvm.topi.cpp`` and ``tvm.topi._ffi_api``: TOPI's C++ functions, by their calling
    conventions (pool types as codes, `take`'s optional axis before the mode), on schedlang's
    TOPI."""
    cpp = types.ModuleType("tvm.topi.cpp")
    for name in native.__all__:
        setattr(cpp, name, getattr(native, name))

    def take(a, indices, batch_dims, *rest):
        axis, mode = (None, rest[0]) if len(rest) == 1 else rest
        return native.take(a, indices, axis, batch_dims, mode)

    cpp.take = take
    cpp.fast_exp = lambda x, dtype, tag: native.fast_exp(x)
    nn = types.ModuleType("tvm.topi.cpp.nn")
    nn.pool1d = lambda x, k, s, d, p, code, *rest: native.nn.pool1d(
        x, k, s, d, p, _POOL_TYPES[code], *rest
    )
    nn.pool2d = lambda x, k, s, d, p, code, *rest: native.nn.pool2d(
        x, k, s, d, p, _POOL_TYPES[code], *rest
    )
    nn.pool3d = lambda x, k, s, d, p, code, *rest: native.nn.pool3d(
        x, k, s, d, p, _POOL_TYPES[code], *rest
    )
    nn.global_pool = lambda x, code, layout: native.nn.global_pool(x, _POOL_TYPES[code], layout)
    nn.adaptive_pool = lambda x, size, code, layout: native.nn.adaptive_pool(
        x, size, _POOL_TYPES[code], layout
    )
    nn.lrn = native.nn.lrn
    nn.layer_norm = native.nn.layer_norm
    cpp.nn = nn
    ffi = types.ModuleType("tvm.topi._ffi_api")
    ffi._cast = lambda dtype, x, span=None: native.cast(x, dtype)
    return cpp, ffi


def install(root: Path):
    """``tvm`` as schedlang.tvm, with TOPI's own package from `root`; returns ``tvm``."""
    for info in pkgutil.walk_packages(sl_tvm.__path__, prefix="schedlang.tvm."):
        if not info.name.startswith("schedlang.tvm.topi"):
            module = importlib.import_module(info.name)
            sys.modules["tvm." + info.name[len("schedlang.tvm.") :]] = module
    sys.modules["tvm"] = sl_tvm
    for outside in ("relay", "auto_scheduler"):
        sys.modules[f"tvm.{outside}"] = types.ModuleType(f"tvm.{outside}")
        setattr(sl_tvm, outside, sys.modules[f"tvm.{outside}"])
    cpp, ffi = _cpp_half()
    sys.modules.update({"tvm.topi.cpp": cpp, "tvm.topi.cpp.nn": cpp.nn, "tvm.topi._ffi_api": ffi})
    sys.meta_path.insert(0, _TopiFinder(root))
    topi = importlib.import_module("tvm.topi")
    for name in ("x86", "generic", "cuda", "gpu", "nn", "image", "testing"):
        importlib.import_module(f"tvm.topi.{name}")
    return sl_tvm, topi


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a TVM checkout, or a git repository with tag v0.14.0")
    parser.add_argument(
        "--target",
        choices=("cpu", "cuda"),
        default="cpu",
        help="TOPI's x86 and generic schedules on the CPU, or its CUDA schedules",
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="with --target cuda: assemble with ptxas and simulate even where a GPU is usable",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    tvm, topi = install(topi_sources(args.path))
    operators = Operators(tvm, topi)
    routes = ("x86", "generic") if args.target == "cpu" else ("cuda",)
    results: dict[str, dict[str, str]] = {}
    seconds: dict[str, float] = {}  # an operator's build, run and check on a route
    for name in OPERATORS:
        for route in routes:
            start = time.perf_counter()
            if route == "cuda":
                status = measure_cuda(tvm, operators, name, args.simulate)
            else:
                status = measure(tvm, operators, name, route)
            results.setdefault(name, {})[route] = status
            seconds[f"{name} ({route})"] = round(time.perf_counter() - start, 2)
    mode = cuda_mode(args.simulate) if args.target == "cuda" else "cpu"
    if args.json:
        found = {"results": results, "mode": mode, "import_failures": IMPORT_FAILURES}
        print(json.dumps({**found, "seconds": seconds}))
        return 0
    for route in routes:
        matched = sum(r[route] == "match" for r in results.values())
        print(f"{route} ({mode}): {matched} of {len(OPERATORS)} operators match numpy")
        for name, r in results.items():
            if r[route] != "match":
                print(f"  {name}: {r[route]}")
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:3]
    print("slowest (seconds of a build, its run and its check):")
    for key, spent in slowest:
        print(f"  {spent:8.2f}  {key}")
    print(f"{len(IMPORT_FAILURES)} statements of TOPI's package __init__ files failed:")
    for failure in IMPORT_FAILURES:
        print(f"  {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
