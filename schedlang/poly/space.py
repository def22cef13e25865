"""isl names for the symbolic sizes and tensors of one lowering."""

from __future__ import annotations

import re

import islpy as isl

from ..ir.expr import Var
from ..ir.tensor import ComputeOp, Operation
from ..ir.visit import walk


class Params:
    """The symbolic sizes as isl parameters (each >= 1), and isl tuple names for tensors."""

    def __init__(self, ops: list[Operation]) -> None:
        self.names: dict[Var, str] = {}
        self.vars: dict[str, Var] = {}
        self.tensor_names: dict[Operation, str] = {}
        for op in ops:
            exprs = list(op.shape)
            if isinstance(op, ComputeOp):
                for iv in op.reduce_axis:
                    exprs += [iv.dom.min, iv.dom.extent]
            for e in exprs:
                for node in walk(e):
                    if isinstance(node, Var) and node.kind == "size" and node not in self.names:
                        name = self._unique(node.name)
                        self.names[node] = name
                        self.vars[name] = node
            self.tensor_names[op] = self._unique("T_" + op.name)
        listed = ", ".join(self.names.values())
        self.prefix = f"[{listed}] ->"
        positive = " and ".join(f"{n} >= 1" for n in self.names.values()) or "0 = 0"
        self.context = isl.Set(f"{self.prefix} {{ : {positive} }}")

    def _unique(self, name: str) -> str:
        base = re.sub(r"\W", "_", name) or "v"
        taken = set(self.names.values()) | set(self.tensor_names.values())
        candidate, k = base, 1
        while candidate in taken:
            candidate = f"{base}_{k}"
            k += 1
        return candidate

    def tensor(self, op: Operation) -> str:
        return self.tensor_names[op]
