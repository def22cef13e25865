"""Expressions of a hybrid script: Python values where the script computes with Python
values (sizes, lists it captured, ``const_range`` variables), schedlang expressions where it
reads tensors or loop variables. `ExpressionReader` is the part of the parser that reads them.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
from collections.abc import Callable

from .. import math as slmath
from ..expr import Const, Expr, as_expr, select
from ..tensor import Tensor
from ..tensor_slice import TensorSlice

# TE's ``max_num_threads()``: the most threads a block has on the GPU a script is built for,
# 1024 on every CUDA GPU since compute capability 2.0 (schedlang's GPU target is CUDA)
GPU_BLOCK_THREADS = 1024
LOOPS = {
    "range": "serial",
    "parallel": "parallel",
    "vectorize": "vectorized",
    "unroll": "unrolled",
}
MATH: dict[str, Callable] = {
    "sqrt": slmath.sqrt,
    "log": slmath.log,
    "exp": slmath.exp,
    "tanh": slmath.tanh,
    "sigmoid": slmath.sigmoid,
    "power": slmath.pow,
    "floor": slmath.floor,
    "ceil": slmath.ceil,
    "abs": slmath.abs,
    "popcount": slmath.popcount,
    "likely": lambda cond: cond,
    "ceil_div": lambda a, b: (a + b - 1) // b,
    "max_num_threads": lambda allow_none=True: GPU_BLOCK_THREADS,
}
CASTS = ("int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64")
OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}


BUILTIN = object()
HYBRID_NAMES = frozenset(
    {"output_tensor", "allocate", "const_range", "bind", *LOOPS, *MATH, *CASTS}
)


class ExpressionReader:
    """Reads expressions for a parser that has `env` (names in scope), `fn` (the function
    being read), `scalars()` and `fail(node, what)`."""

    def callee(self, node: ast.expr):
        """What a call calls: a hybrid builtin's name, a script, or None."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            return None
        name = node.func.id
        if name in self.env:
            return None
        value = self.lookup(name, node)
        if getattr(value, "is_hybrid_script", False):
            return value
        return name if value is BUILTIN else None

    def call_args(self, node: ast.Call, names: tuple[str, ...], required: int) -> list:
        values = [self.expr(a) for a in node.args]
        given = dict(zip(names, values))
        for kw in node.keywords:
            given[kw.arg] = self.expr(kw.value)
        if len(given) < required or any(n not in names for n in given):
            raise self.fail(node, f"{node.func.id} takes ({', '.join(names)})")
        return [given.get(n) for n in names]

    def lookup(self, name: str, node: ast.AST) -> object:
        if name in self.env:
            return self.env[name]
        closure = inspect.getclosurevars(self.fn)
        if name in closure.nonlocals:
            return closure.nonlocals[name]
        if name in HYBRID_NAMES:
            return BUILTIN
        if name in self.fn.__globals__:
            return self.fn.__globals__[name]
        if hasattr(builtins, name) and name in ("len", "min", "max", "True", "False"):
            return BUILTIN
        raise self.fail(node, f"'{name}' is not defined")

    def expr(self, node: ast.expr) -> object:
        handler = getattr(self, f"expr_{type(node).__name__}", None)
        if handler is None:
            raise self.fail(node, f"the expression {type(node).__name__} is not supported")
        return handler(node)

    def expr_Constant(self, node: ast.Constant) -> object:
        return node.value

    def expr_Name(self, node: ast.Name) -> object:
        value = self.lookup(node.id, node)
        if isinstance(value, Tensor) and node.id in self.scalars():
            return value[0]
        return value

    def expr_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_BinOp(self, node: ast.BinOp) -> object:
        op = OPERATORS.get(type(node.op))
        if op is None:
            raise self.fail(node, f"the operator {type(node.op).__name__} is not supported")
        return op(self.expr(node.left), self.expr(node.right))

    def expr_UnaryOp(self, node: ast.UnaryOp) -> object:
        value = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Not):
            return ~as_expr(value) if isinstance(value, Expr) else not value
        raise self.fail(node, f"the operator {type(node.op).__name__} is not supported")

    def expr_BoolOp(self, node: ast.BoolOp) -> object:
        values = [self.expr(v) for v in node.values]
        conjunction = isinstance(node.op, ast.And)
        known = [bool(v) for v in values if not isinstance(v, Expr)]
        if conjunction in [not k for k in known]:  # a false operand of and, a true one of or
            return not conjunction
        exprs = [v for v in values if isinstance(v, Expr)]
        if not exprs:
            return conjunction
        if conjunction:
            return functools.reduce(lambda a, b: a & b, exprs)
        return functools.reduce(lambda a, b: a | b, exprs)

    def expr_Compare(self, node: ast.Compare) -> object:
        left = self.expr(node.left)
        parts = []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            parts.append(OPERATORS[type(op)](left, right))
            left = right
        if not any(isinstance(p, Expr) for p in parts):
            return all(parts)
        return functools.reduce(lambda a, b: as_expr(a) & as_expr(b), parts)

    def expr_IfExp(self, node: ast.IfExp) -> object:
        cond = self.expr(node.test)
        if not isinstance(cond, Expr):
            return self.expr(node.body if cond else node.orelse)
        return select(cond, self.expr(node.body), self.expr(node.orelse))

    def expr_Attribute(self, node: ast.Attribute) -> object:
        value = self.expr(node.value)
        if isinstance(value, Tensor) and node.attr == "shape":
            return tuple(int(d) if isinstance(d, Const) else d for d in value.shape)
        if isinstance(value, Tensor) and node.attr == "dtype":
            return value.dtype
        raise self.fail(node, f"'.{node.attr}' is not supported (tensors have shape and dtype)")

    def expr_Subscript(self, node: ast.Subscript) -> object:
        value = self.expr(node.value)
        index = self.expr(node.slice)
        if isinstance(value, (Tensor, TensorSlice)):
            return value[index]
        steps = index if isinstance(index, tuple) else (index,)
        if isinstance(value, (tuple, list)) and all(isinstance(k, int) for k in steps):
            for k in steps:
                value = value[k]
            return value
        raise self.fail(node, "index tensors, or Python lists and tuples by Python integers")

    def expr_Call(self, node: ast.Call) -> object:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, "call functions by name")
        name = node.func.id
        callee = self.callee(node)
        if callee is None or not isinstance(callee, str):
            raise self.fail(
                node,
                f"'{name}': a script calls math functions and other scripts "
                "(a script's result is assigned to a name)",
            )
        args = [self.expr(a) for a in node.args]
        if name == "len":
            value = args[0]
            return value.shape[0] if isinstance(value, Tensor) else len(value)
        if name in ("min", "max"):
            if not any(isinstance(a, Expr) for a in args):
                return min(args) if name == "min" else max(args)
            pick = slmath.minimum if name == "min" else slmath.maximum
            return functools.reduce(pick, args)
        if name in CASTS:
            return as_expr(args[0]).astype(name)
        if name in MATH:
            return MATH[name](*args)
        raise self.fail(node, f"'{name}' is not supported in compiled scripts")
