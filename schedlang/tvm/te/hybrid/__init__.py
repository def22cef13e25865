"""``tvm.te.hybrid``: TE's hybrid script, which is schedlang's (`schedlang.ir.hybrid`), and
TE's `HybridModule`: a script kept as Python source, saved and loaded as a file."""

from __future__ import annotations

import hashlib
import inspect
import linecache
import textwrap
from pathlib import Path

from ....errors import AlgorithmError
from ....ir.expr import Var
from ....ir.hybrid import HybridFunction, HybridOp, script
from ....ir.tensor import Tensor
from .scheduled import scheduled_source

__all__ = ["HybridModule", "build", "script"]


class HybridModule:
    """A hybrid script as a module (TE's ``te.hybrid.build`` result): called like the script,
    on tensors or on arrays; `save` writes its source, `load` reads one back."""

    def __init__(self, src: str | None = None, name: str | None = None) -> None:
        self.src = src
        self.name = name
        self.function: HybridFunction | None = None
        self.bound: tuple | None = None  # the arguments of the call `build` made it from
        if src is not None:
            self._define(src, "<hybrid module>")

    def __call__(self, *args: object):
        if self.function is None:
            raise AlgorithmError("HybridModule: load a script before calling it")
        return self.function(*self._arguments(args))

    def _arguments(self, given: tuple) -> tuple:
        """The script's arguments: those `build` was called with that are neither tensors nor
        variables stay what they were, the others are `given`, in order."""
        if self.bound is None:
            return given
        taken = iter(given)
        args = tuple(next(taken) if _is_argument(a) else a for a in self.bound)
        if next(taken, None) is not None or len(given) != sum(map(_is_argument, self.bound)):
            raise AlgorithmError(
                f"HybridModule '{self.name}' takes {sum(map(_is_argument, self.bound))} "
                f"argument(s) (the tensors and variables it was built over), got {len(given)}"
            )
        return args

    def save(self, path) -> None:
        Path(path).write_text(self.src)

    def load(self, path) -> None:
        self.src = Path(path).read_text()
        self._define(self.src, str(path))

    def _define(self, src: str, filename: str) -> None:
        if not Path(filename).is_file():  # the parser reads the source back, as Python does
            filename = f"<hybrid module {hashlib.sha256(src.encode()).hexdigest()[:12]}>"
            linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace: dict[str, object] = {}
        exec(compile(src, filename, "exec"), namespace)  # noqa: S102 - the user's own script
        functions = [v for v in namespace.values() if inspect.isfunction(v)]
        if len(functions) != 1:
            raise AlgorithmError("HybridModule: the source must define exactly one function")
        self.function = HybridFunction(functions[0])
        self.name = functions[0].__name__


def build(sch, inputs, outputs) -> HybridModule:
    """The module of the script that computes `outputs` (TE's ``te.hybrid.build``): the script
    as `sch` runs it, its loops bound or annotated as the schedule has them (`scheduled`)."""
    op = outputs[0].op
    if not isinstance(op, HybridOp):
        raise AlgorithmError(f"te.hybrid.build: '{op.name}' is not computed by a hybrid script")
    func = op.call.func
    src = _without_decorators(textwrap.dedent(inspect.getsource(func)))
    scheduled = scheduled_source(src, sch, op)
    if scheduled is not None:
        module = HybridModule(scheduled)
    else:
        module = HybridModule()
        module.src = src
        module.function = HybridFunction(func)
        module.name = func.__name__
    module.bound = op.call.args
    return module


def _without_decorators(src: str) -> str:
    lines = src.splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith("def "))
    return "".join(lines[start:])


def _is_argument(value: object) -> bool:
    return isinstance(value, (Tensor, Var))
