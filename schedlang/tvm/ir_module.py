"""TE's containers of lowered functions: `IRModule` maps names to `PrimFunc`s, each a
schedlang loop nest (`LoweredFunc`) under TE's names. The statements inside are schedlang's
loop IR, walked with `tvm.tir.stmt_functor.post_order_visit`; TVM's own TIR node classes are
not modelled."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..loopir.core.nodes import LoweredFunc, Stmt


class PrimFunc:
    """One lowered function: `body` is its loop nest, `params` its argument buffers."""

    def __init__(self, func: LoweredFunc) -> None:
        self.func = func

    @property
    def body(self) -> Stmt:
        return self.func.body

    @property
    def params(self) -> tuple:
        return self.func.params

    def __str__(self) -> str:
        return str(self.func)

    def _repr_html_(self) -> str:
        return self.func._repr_html_()


class IRModule(Mapping):
    """Functions by name; printed, it is the functions' loop nests."""

    def __init__(self, functions: Mapping[str, PrimFunc] | None = None) -> None:
        self.functions = dict(functions or {})

    @staticmethod
    def of(func: LoweredFunc) -> IRModule:
        """The module of `func`, or of each function of a lowering with several (extern
        stages and hybrid scripts run as functions of their own), each under its name."""
        if not hasattr(func, "functions"):
            return IRModule({func.name: PrimFunc(func)})
        functions: dict[str, PrimFunc] = {}
        for f in func.functions():
            name, k = f.name, 1
            while name in functions:
                name, k = f"{f.name}_{k}", k + 1
            functions[name] = PrimFunc(f)
        return IRModule(functions)

    def __getitem__(self, name: str) -> PrimFunc:
        return self.functions[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def __str__(self) -> str:
        return "\n".join(str(f) for f in self.functions.values())

    def _repr_html_(self) -> str:
        return "".join(f._repr_html_() for f in self.functions.values())
