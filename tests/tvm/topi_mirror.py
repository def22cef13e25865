"""TVM v0.14's own TOPI Python files run on schedlang: how many of 29 operators match numpy.

    python -m tests.tvm.topi_mirror PATH [--json]

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
where it has one). It runs in a process of its own, since it replaces ``tvm`` in
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
import types
from pathlib import Path

import numpy as np

import schedlang.tvm as sl_tvm
from schedlang.tvm import topi as native

from .topi_check import poisoned, random


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
                IMPORT_FAILURES.append(f"{module.__name__}: `{line}`: {_reason(error)}")


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
    for name in ("x86", "generic", "nn", "image", "testing"):
        importlib.import_module(f"tvm.topi.{name}")
    return sl_tvm, topi


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}"


class Operators:
    """The 29 operators: for each, the inputs, TOPI's computes and schedules by route ("x86":
    the compute and schedule TVM's x86 strategy picks; "generic": TOPI's generic schedule of
    the ``topi.nn`` compute) and numpy's result."""

    def __init__(self, tvm, topi) -> None:
        self.tvm, self.topi, self.te = tvm, topi, tvm.te
        self.x86, self.generic = topi.x86, topi.generic
        self.ref = topi.testing

    def _ph(self, shape, name, dtype="float32"):
        return self.te.placeholder(shape, name=name, dtype=dtype)

    def _elementwise(self, make, ref, shape=(3, 5, 7), low=-1.0):
        A = self._ph(shape, "A")
        a = random(shape, low=low)
        schedule = {"x86": self.x86.schedule_injective, "generic": self.generic.schedule_injective}
        return [A], [a], lambda route: (make(A), schedule[route]), ref(a)

    def exp(self):
        return self._elementwise(self.topi.exp, np.exp)

    def relu(self):
        return self._elementwise(self.topi.nn.relu, lambda a: np.maximum(a, 0))

    def add(self):
        A, B = self._ph((3, 5, 7), "A"), self._ph((5, 1), "B")
        a, b = random((3, 5, 7)), random((5, 1), seed=1)
        schedule = {"x86": self.x86.schedule_injective, "generic": self.generic.schedule_injective}
        return [A, B], [a, b], lambda route: (self.topi.add(A, B), schedule[route]), a + b

    def broadcast_to(self):
        return self._elementwise(
            lambda A: self.topi.broadcast_to(A, (3, 5, 7)),
            lambda a: np.broadcast_to(a, (3, 5, 7)),
            shape=(5, 1),
        )

    def _reduce(self, make, ref):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7))
        schedule = {"x86": self.x86.schedule_reduce, "generic": self.generic.schedule_reduce}
        return [A], [a], lambda route: (make(A), schedule[route]), ref(a)

    def sum(self):
        return self._reduce(lambda A: self.topi.sum(A, axis=(0, 2)), lambda a: a.sum((0, 2)))

    def max(self):
        return self._reduce(
            lambda A: self.topi.max(A, axis=-1, keepdims=True), lambda a: a.max(-1, keepdims=True)
        )

    def argmax(self):
        return self._reduce(lambda A: self.topi.argmax(A, axis=1), lambda a: a.argmax(1))

    def _softmax(self, make, ref):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7), low=-3, high=3)
        schedule = {"x86": self.x86.schedule_softmax, "generic": self.generic.schedule_softmax}
        return [A], [a], lambda route: (make(A), schedule[route]), ref(a)

    def softmax(self):
        return self._softmax(
            lambda A: self.topi.nn.softmax(A, axis=1), lambda a: self.ref.softmax_python(a, 1)
        )

    def log_softmax(self):
        return self._softmax(
            lambda A: self.topi.nn.log_softmax(A, axis=1),
            lambda a: self.ref.log_softmax_python(a, 1),
        )

    def dense(self):
        X, W, B = self._ph((5, 9), "X"), self._ph((7, 9), "W"), self._ph((7,), "bias")
        x, w, b = random((5, 9)), random((7, 9), seed=1), random((7,), seed=2)
        routes = {
            "x86": lambda: (self.x86.dense_nopack(X, W, B), self.x86.schedule_dense_nopack),
            "generic": lambda: (self.topi.nn.dense(X, W, B), self.generic.schedule_dense),
        }
        return [X, W, B], [x, w, b], lambda route: routes[route](), x @ w.T + b

    def dense_pack(self):
        X, W = self._ph((5, 9), "X"), self._ph((8, 9), "W")
        x, w = random((5, 9)), random((8, 9), seed=1)
        packed = w.reshape(2, 4, 9).transpose(0, 2, 1).copy()
        P = self._ph(packed.shape, "P")

        def route(name):
            if name == "x86":
                return self.x86.dense_pack(X, W), self.x86.schedule_dense_pack
            return self.topi.nn.dense_pack(X, P), self.generic.schedule_dense, [X, P], [x, packed]

        return [X, W], [x, w], route, x @ w.T

    def matmul(self):
        A, B = self._ph((9, 5), "A"), self._ph((9, 7), "B")
        a, b = random((9, 5)), random((9, 7), seed=1)
        make = lambda: self.topi.nn.matmul(A, B, transpose_a=True)  # noqa: E731
        return [A, B], [a, b], lambda route: (make(), self.generic.schedule_matmul), a.T @ b

    def batch_matmul(self):
        X, Y = self._ph((3, 5, 9), "X"), self._ph((3, 7, 9), "Y")
        x, y = random((3, 5, 9)), random((3, 7, 9), seed=1)
        routes = {
            "x86": lambda: (self.x86.batch_matmul(X, Y), self.x86.schedule_batch_matmul),
            "generic": lambda: (
                self.topi.nn.batch_matmul(X, Y),
                self.generic.schedule_batch_matmul,
            ),
        }
        return [X, Y], [x, y], lambda route: routes[route](), self.ref.batch_matmul(x, y)

    def _conv_inputs(self, weight_shape):
        D, W = self._ph((2, 3, 9, 11), "D"), self._ph(weight_shape, "W")
        return [D, W], [random((2, 3, 9, 11)), random(weight_shape, seed=1)]

    def conv2d_nchw(self):
        (D, W), (d, w) = inputs, arrays = self._conv_inputs((4, 3, 3, 3))
        routes = {
            "x86": lambda: (
                self.x86.conv2d_nchw(D, W, (2, 2), (1, 1), (1, 1), "float32"),
                self.x86.schedule_conv2d_nchw,
            ),
            "generic": lambda: (
                self.topi.nn.conv2d_nchw(D, W, (2, 2), (1, 1), (1, 1), "float32"),
                self.generic.schedule_conv2d_nchw,
            ),
        }
        expected = self.ref.conv2d_nchw_python(d, w, (2, 2), (1, 1))
        return inputs, arrays, lambda route: routes[route](), expected

    def depthwise_conv2d_nchw(self):
        (D, W), (d, w) = inputs, arrays = self._conv_inputs((3, 2, 3, 3))
        routes = {
            "x86": lambda: (
                self.x86.depthwise_conv2d_nchw(D, W, (1, 1), (1, 1), (1, 1), "float32"),
                self.x86.schedule_depthwise_conv2d_nchw,
            ),
            "generic": lambda: (
                self.topi.nn.depthwise_conv2d_nchw(D, W, (1, 1), (1, 1), (1, 1), "float32"),
                self.generic.schedule_depthwise_conv2d_nchw,
            ),
        }
        expected = np.concatenate(
            [
                self.ref.conv2d_nchw_python(d[:, c : c + 1], w[c].reshape(2, 1, 3, 3), 1, 1)
                for c in range(3)
            ],
            axis=1,
        )
        return inputs, arrays, lambda route: routes[route](), expected

    def conv2d_transpose_nchw(self):
        (D, W), (d, w) = inputs, arrays = self._conv_inputs((3, 4, 3, 3))
        routes = {
            "x86": lambda: (
                self.x86.conv2d_transpose_nchw(D, W, (2, 2), (1, 1), "float32", (1, 0)),
                self.x86.schedule_conv2d_transpose_nchw,
            ),
            "generic": lambda: (
                self.topi.nn.conv2d_transpose_nchw(D, W, (2, 2), (1, 1), "float32", (1, 0)),
                self.generic.schedule_conv2d_transpose_nchw,
            ),
        }
        expected = self.ref.conv2d_transpose_nchw_python(d, w, (2, 2), (1, 1), (1, 0))
        return inputs, arrays, lambda route: routes[route](), expected

    def _pool(self, kind):
        D = self._ph((2, 3, 9, 11), "D")
        d = random((2, 3, 9, 11))
        args = ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), kind, False, "NCHW", False)
        schedule = {
            "x86": lambda outs: self.x86.schedule_pool(outs, "NCHW"),
            "generic": lambda outs: self.generic.schedule_pool(outs, "NCHW"),
        }
        expected = self.ref.poolnd_python(
            d, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), kind, False, False, layout="NCHW"
        )
        return [D], [d], lambda route: (self.topi.nn.pool2d(D, *args), schedule[route]), expected

    def max_pool2d(self):
        return self._pool("max")

    def avg_pool2d(self):
        return self._pool("avg")

    def global_avg_pool(self):
        D = self._ph((2, 3, 9, 11), "D")
        d = random((2, 3, 9, 11))
        schedule = {
            "x86": self.x86.schedule_adaptive_pool,
            "generic": self.generic.schedule_adaptive_pool,
        }
        make = lambda: self.topi.nn.global_pool(D, "avg")  # noqa: E731
        return [D], [d], lambda route: (make(), schedule[route]), d.mean((2, 3), keepdims=True)

    def _injective(self, inputs, arrays, make, expected, x86=None):
        schedule = {
            "x86": x86 or self.x86.schedule_injective,
            "generic": self.generic.schedule_injective,
        }
        return inputs, arrays, lambda route: (make(), schedule[route]), expected

    def layout_transform(self):
        A = self._ph((2, 8, 5, 3), "A")
        a = random((2, 8, 5, 3))
        make = lambda: self.topi.layout_transform(A, "NCHW", "NCHW4c")  # noqa: E731
        expected = a.reshape(2, 2, 4, 5, 3).transpose(0, 1, 3, 4, 2)
        return self._injective([A], [a], make, expected)

    def concatenate(self):
        A, B = self._ph((3, 5, 7), "A"), self._ph((3, 2, 7), "B")
        a, b = random((3, 5, 7)), random((3, 2, 7), seed=1)

        def route(name):
            if name == "x86":
                return self.x86.concatenate([A, B], 1), self.x86.schedule_concatenate_cpu
            return self.topi.concatenate([A, B], 1), self.generic.schedule_injective

        return [A, B], [a, b], route, np.concatenate([a, b], 1)

    def split(self):
        A = self._ph((3, 6, 7), "A")
        a = random((3, 6, 7))
        make = lambda: self.topi.split(A, 3, axis=1)  # noqa: E731
        return self._injective([A], [a], make, np.split(a, 3, axis=1))

    def transpose(self):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7))
        make = lambda: self.topi.transpose(A, (2, 0, 1))  # noqa: E731
        return self._injective([A], [a], make, a.transpose(2, 0, 1))

    def take(self):
        A, I = self._ph((3, 5, 7), "A"), self._ph((2, 3), "I", "int32")
        a, ind = random((3, 5, 7)), np.array([[0, 4, -2], [9, 1, 3]], "int32")
        make = lambda: self.topi.take(A, I, axis=1)  # noqa: E731
        return self._injective([A, I], [a, ind], make, np.take(a, ind, 1, mode="clip"))

    def gather(self):
        A, G = self._ph((3, 5, 7), "A"), self._ph((3, 5, 2), "G", "int32")
        a, g = random((3, 5, 7)), random((3, 5, 2), "int32", 0, 7)
        make = lambda: self.topi.gather(A, 2, G)  # noqa: E731
        return self._injective([A, G], [a, g], make, self.ref.gather_python(a, 2, g))

    def resize2d(self):
        D = self._ph((2, 3, 5, 7), "D")
        d = random((2, 3, 5, 7))
        make = lambda: self.topi.image.resize2d(D, (0.0, 0.0, 0.0, 0.0), (8, 4))  # noqa: E731
        expected = self.ref.resize2d_python(d, (8 / 5, 4 / 7), "NCHW", "linear", "half_pixel")
        return self._injective([D], [d], make, expected)

    def pad(self):
        A = self._ph((3, 5, 7), "A")
        a = random((3, 5, 7))
        make = lambda: self.topi.nn.pad(A, (1, 0, 2), (0, 2, 1), 0.5)  # noqa: E731
        expected = np.pad(a, ((1, 0), (0, 2), (2, 1)), constant_values=0.5)
        return self._injective([A], [a], make, expected)

    def lrn(self):
        L = self._ph((2, 7, 3, 5), "L")
        x = random((2, 7, 3, 5))
        make = lambda: self.topi.nn.lrn(L, 3, 1, 0.001, 0.75, 2.0)  # noqa: E731
        expected = self.ref.lrn_python(x, 3, 1, 2.0, 0.001, 0.75)
        return [L], [x], lambda route: (make(), self.generic.schedule_lrn), expected

    def layer_norm(self):
        L, G, B = self._ph((2, 5, 3, 7), "L"), self._ph((3, 7), "gamma"), self._ph((3, 7), "beta")
        x, g, b = random((2, 5, 3, 7)), random((3, 7), seed=1), random((3, 7), seed=2)
        make = lambda: self.topi.nn.layer_norm(L, G, B, (2, 3))  # noqa: E731
        expected = self.ref.layer_norm_python(x, g, b, (2, 3))
        schedule = {"x86": self.x86.schedule_injective, "generic": self.generic.schedule_injective}
        return [L, G, B], [x, g, b], lambda route: (make(), schedule[route]), expected


OPERATORS = [
    "exp", "relu", "add", "broadcast_to", "sum", "max", "argmax", "softmax", "log_softmax",
    "dense", "dense_pack", "matmul", "batch_matmul", "conv2d_nchw", "depthwise_conv2d_nchw",
    "conv2d_transpose_nchw", "max_pool2d", "avg_pool2d", "global_avg_pool", "layout_transform",
    "concatenate", "split", "transpose", "take", "gather", "resize2d", "pad", "lrn", "layer_norm",
]  # fmt: skip


def measure(tvm, operators: Operators, name: str, route: str) -> str:
    """ "match", or why TOPI's `route` for operator `name` does not match numpy."""
    try:
        inputs, arrays, make, expected = getattr(operators, name)()
        with tvm.target.Target("llvm"):
            made = make(route)
            outs, schedule = made[:2]
            if len(made) == 4:
                inputs, arrays = made[2], made[3]
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            s = schedule(outs)
        kernel = tvm.build(s, list(inputs) + outs, "llvm")
        results = [poisoned(o) for o in outs]
        kernel(*arrays, *results)
        wanted = expected if isinstance(expected, list) else [expected]
        for got, want in zip(results, wanted):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        return "match"
    except Exception as error:  # noqa: BLE001 - the reason is the measurement's result
        return _reason(error)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a TVM checkout, or a git repository with tag v0.14.0")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    tvm, topi = install(topi_sources(args.path))
    operators = Operators(tvm, topi)
    results = {
        name: {route: measure(tvm, operators, name, route) for route in ("x86", "generic")}
        for name in OPERATORS
    }
    if args.json:
        print(json.dumps({"results": results, "import_failures": IMPORT_FAILURES}))
        return 0
    for route in ("x86", "generic"):
        matched = sum(r[route] == "match" for r in results.values())
        print(f"{route}: {matched} of {len(OPERATORS)} operators match numpy")
        for name, r in results.items():
            if r[route] != "match":
                print(f"  {name}: {r[route]}")
    print(f"{len(IMPORT_FAILURES)} statements of TOPI's package __init__ files failed:")
    for failure in IMPORT_FAILURES:
        print(f"  {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
