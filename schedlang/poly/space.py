"""isl names for the symbolic sizes and tensors of one lowering."""

from __future__ import annotations

import re

import islpy as isl

from ..ir.expr import Var
from ..ir.tensor import ComputeOp, Operation
from ..ir.visit import walk


class Params:
    """The symbolic sizes as isl parameters (each >= 1), and isl tuple names for tensors. A
    size used only in bodies (``A[i] * lo``) is a parameter too, of any value (nothing is
    assumed of it): the kernel takes it like any size, by name where no shape shows it."""

    def __init__(self, ops: list[Operation]) -> None:
        self.names: dict[Var, str] = {}
        self.vars: dict[str, Var] = {}
        self.tensor_names: dict[Operation, str] = {}
        # Ops whose elements are another op's (a scan's init, update and state are its rows).
        self.aliases: dict[Operation, Operation] = {}
        values: list = []  # bodies: a size used there only may take any value
        for op in ops:
            exprs = list(op.shape)
            if isinstance(op, ComputeOp):
                for iv in op.reduce_axis:
                    exprs += [iv.dom.min, iv.dom.extent]
                values.append(op.expr)
            self._add(exprs)
            self.tensor_names[op] = self._unique("T_" + op.name)
        positive = [n for n in self.names.values()]
        self._add(values)
        listed = ", ".join(self.names.values())
        self.prefix = f"[{listed}] ->"
        at_least_one = " and ".join(f"{n} >= 1" for n in positive) or "0 = 0"
        self.context = isl.Set(f"{self.prefix} {{ : {at_least_one} }}")

    def _add(self, exprs: list) -> None:
        for e in exprs:
            for node in walk(e):
                if isinstance(node, Var) and node.kind == "size" and node not in self.names:
                    name = self._unique(node.name)
                    self.names[node] = name
                    self.vars[name] = node

    def _unique(self, name: str) -> str:
        base = re.sub(r"\W", "_", name) or "v"
        taken = set(self.names.values()) | set(self.tensor_names.values())
        candidate, k = base, 1
        while candidate in taken:
            candidate = f"{base}_{k}"
            k += 1
        return candidate

    def tensor(self, op: Operation) -> str:
        return self.tensor_names[self.aliases.get(op, op)]
