"""Accesses of a hybrid script outside its tensors, found exactly with isl before it runs.

A script's loops, conditions and ``if_then_else`` choices bound each of its reads and stores;
where the loops and the index are affine (in the loop variables and the sizes), isl decides
whether some point of the domain reaches outside the tensor and names one. A condition isl
cannot state (one that reads a tensor) is left out, so the domain checked is the larger one.
An access whose index or loops isl cannot state (an index read from a tensor, a product of
variables) is returned unchecked: its function keeps it inside the tensor at run time.
"""

from __future__ import annotations

from collections.abc import Iterator

import islpy as isl

from ..errors import AlgorithmError
from ..ir.expr import Binary, Expr, Read, Select, Unary, Var
from ..ir.hybrid.nodes import Check, Cond, HStmt, HybridCall, Local, Loop, Store
from ..ir.printer import expr_str
from ..ir.visit import children, walk
from .affine import NonAffine, aff_text, cond_text

Bound = tuple[Var, Expr, Expr]  # a loop: its variable, min and extent


def check_script_bounds(call: HybridCall) -> frozenset[int]:
    """Raise `AlgorithmError` for a store or read of `call`'s script outside its tensor; the
    ids of the `Store` and `Read` nodes that could not be checked."""
    checker = _Checker(call)
    checker.block(call.body, [], [])
    return frozenset(checker.unchecked)


class _Checker:
    def __init__(self, call: HybridCall) -> None:
        self.call = call
        shapes = [d for t in (*call.inputs, *call.ops) for d in t.shape]
        self.names: dict[Var, str] = {}
        for v in (n for e in shapes for n in walk(e)):
            if isinstance(v, Var) and v.kind == "size":
                self.names.setdefault(v, f"p{len(self.names)}")
        self.positive = list(self.names.values())  # sizes of shapes are at least 1
        self.unchecked: set[int] = set()

    def block(self, stmts: tuple[HStmt, ...], loops: list[Bound], conds: list[Expr]) -> None:
        for s in stmts:
            if isinstance(s, Store):
                self.access(s, s.tensor, s.indices, "writes", loops, conds)
                for e in (*s.indices, s.value):
                    self.reads(e, loops, conds)
            elif isinstance(s, Loop):
                self.reads(s.min, loops, conds)
                self.reads(s.extent, loops, conds)
                self.block(s.body, [*loops, (s.var, s.min, s.extent)], conds)
            elif isinstance(s, Cond):
                self.reads(s.cond, loops, conds)
                self.block(s.then, loops, [*conds, s.cond])
                self.block(s.otherwise, loops, [*conds, Unary("not", s.cond, "bool")])
            elif isinstance(s, Local):
                self.block(s.body, loops, conds)
            elif isinstance(s, Check):
                self.reads(s.cond, loops, conds)

    def reads(self, e: Expr, loops: list[Bound], conds: list[Expr]) -> None:
        for read, guards in _guarded_reads(e, conds):
            self.access(read, read.tensor, read.indices, "reads", loops, guards)

    def access(self, node, tensor, indices, verb: str, loops: list[Bound], conds) -> None:
        names = dict(self.names)
        for v, _, _ in loops:
            names[v] = f"p{len(names)}"
        for v in (n for e in (*indices, *conds, *_bound_exprs(loops)) for n in walk(e)):
            if isinstance(v, Var) and v not in names:
                names[v] = f"p{len(names)}"
        loop_names = [names[v] for v, _, _ in loops]
        params = [n for v, n in names.items() if n not in loop_names]
        try:
            domain = [
                f"{aff_text(lo, names)} <= {names[v]} < {aff_text(lo, names)} + "
                f"{aff_text(extent, names)}"
                for v, lo, extent in loops
            ]
            outside = [
                f"({aff_text(i, names)} < 0 or {aff_text(i, names)} >= {aff_text(n, names)})"
                for i, n in zip(indices, tensor.shape)
            ]
        except NonAffine:
            self.unchecked.add(id(node))  # kept inside at run time (see the module)
            return
        domain += [text for c in conds for text in _affine_parts(c, names)]
        if not outside:
            return
        sizes = [f"{n} >= 1" for n in self.positive]
        text = (
            f"[{', '.join(params)}] -> {{ [{', '.join(loop_names)}] : "
            f"{' and '.join([*sizes, *domain, '(' + ' or '.join(outside) + ')'])} }}"
        )
        points = isl.Set(text)
        if not points.is_empty():
            raise AlgorithmError(self.message(tensor, indices, verb, points, names, loops))

    def message(self, tensor, indices, verb: str, points: isl.Set, names, loops) -> str:
        point = points.sample_point()
        space = point.get_space()
        by_name = {n: v for v, n in names.items()}
        at = [
            f"{v.name}={point.get_coordinate_val(isl.dim_type.set, k).to_python()}"
            for k, (v, _, _) in enumerate(loops)
        ]
        for k in range(space.dim(isl.dim_type.param)):
            var = by_name[space.get_dim_name(isl.dim_type.param, k)]
            at.append(f"{var.name}={point.get_coordinate_val(isl.dim_type.param, k).to_python()}")
        element = f"{tensor.name}[{', '.join(expr_str(i) for i in indices)}]"
        shape = ", ".join(expr_str(n) for n in tensor.shape)
        where = f" at {', '.join(at)}" if at else ""
        return (
            f"hybrid script '{self.call.name}' {verb} {element} out of bounds{where}: outside "
            f"its shape ({shape}); guard the access with an if, or shrink the loop"
        )


def _bound_exprs(loops: list[Bound]) -> Iterator[Expr]:
    for _, lo, extent in loops:
        yield lo
        yield extent


def _guarded_reads(e: Expr, conds: list[Expr]) -> Iterator[tuple[Read, list[Expr]]]:
    """The reads of `e`, each with the conditions under which it is evaluated: those given,
    and the choices of the ``if_then_else`` around it."""
    if isinstance(e, Read):
        yield e, conds
        for i in e.indices:
            yield from _guarded_reads(i, conds)
        return
    if isinstance(e, Select):
        yield from _guarded_reads(e.cond, conds)
        yield from _guarded_reads(e.true_value, [*conds, e.cond])
        yield from _guarded_reads(e.false_value, [*conds, Unary("not", e.cond, "bool")])
        return
    for child in children(e):
        yield from _guarded_reads(child, conds)


def _affine_parts(cond: Expr, names: dict) -> list[str]:
    """isl text of the conjuncts of `cond` that isl can state (the others are left out)."""
    if isinstance(cond, Binary) and cond.op == "and":
        return _affine_parts(cond.a, names) + _affine_parts(cond.b, names)
    try:
        return [cond_text(cond, names)]
    except NonAffine:
        return []
