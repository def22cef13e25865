"""Readable text for expressions and tensor definitions, with as few parentheses as Python needs.

Operators print with Python's precedence, so a printed expression reads as the Python that built
it: ``C[i, j] = sum(A[i, k] * B[k, j], k in [0, K))``.
"""

from __future__ import annotations

from ..errors import deep_recursion
from .expr import Binary, Call, Cast, Compare, Const, Expr, Read, Reduce, Select, Unary, Var
from .intrinsics import EXTERN, INTRIN
from .tensor import ComputeOp, IterVar, Tensor

_BINARY_PRECEDENCE = {
    "or": 1,
    "and": 2,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "//": 10,
    "%": 10,
}
_NOT, _COMPARE, _UNARY, _ATOM = 3, 4, 11, 13


def _precedence(e: Expr) -> int:
    if isinstance(e, Binary) and e.op in _BINARY_PRECEDENCE:
        return _BINARY_PRECEDENCE[e.op]
    if isinstance(e, Compare):
        return _COMPARE
    if isinstance(e, Unary):
        return _NOT if e.op == "not" else _UNARY
    if isinstance(e, Const) and isinstance(e.value, (int, float)) and e.value < 0:
        return _UNARY
    return _ATOM


def _wrap(e: Expr, parens: bool) -> str:
    text = _text(e)
    return f"({text})" if parens else text


def _const_str(c: Const) -> str:
    if isinstance(c.value, bool):
        return str(c.value)
    return repr(c.value)


def expr_str(e: Expr) -> str:
    """`e` as text, e.g. ``A[i, k] * B[k, j] + 1.0``: as deep as the expression nests (a sum
    of 1000 terms, a chain of 1000 inlined stages)."""
    with deep_recursion():
        return _text(e)


def _text(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IterVar):
        return e.var.name
    if isinstance(e, Const):
        return _const_str(e)
    if isinstance(e, Binary) and e.op in ("min", "max"):
        return f"{e.op}({_text(e.a)}, {_text(e.b)})"
    if isinstance(e, (Binary, Compare)):
        p = _precedence(e)
        chained = isinstance(e, Compare)
        left = _wrap(e.a, _precedence(e.a) < p or (chained and _precedence(e.a) == p))
        right = _wrap(e.b, _precedence(e.b) <= p)
        return f"{left} {e.op} {right}"
    if isinstance(e, Unary):
        p = _precedence(e)
        inner = _wrap(e.a, _precedence(e.a) < p)
        return f"not {inner}" if e.op == "not" else f"{e.op}{inner}"
    if isinstance(e, Select):
        parts = ", ".join(_text(x) for x in (e.cond, e.true_value, e.false_value))
        return f"select({parts})"
    if isinstance(e, Cast):
        return f"{e.dtype}({_text(e.value)})"
    if isinstance(e, Call):
        args = ", ".join(_text(a) for a in e.args)
        for kind, call in ((EXTERN, "call_pure_extern"), (INTRIN, "call_intrin")):
            if e.name.startswith(kind):  # a function or intrinsic by name: say so
                return f'{call}("{e.name[len(kind) :]}", {args})'
        return f"{e.name}({args})"
    if isinstance(e, Read):
        return f"{e.tensor.name}[{', '.join(_text(i) for i in e.indices)}]"
    if isinstance(e, Reduce):
        parts = [_text(e.source)]
        parts += [f"{ax.var.name} in {ax.dom}" for ax in e.axis]
        if e.where is not None:
            parts.append(f"where={_text(e.where)}")
        return f"{e.combiner.name}({', '.join(parts)})"
    extension = getattr(e, "sl_str", None)
    if extension is not None:
        return extension(_text)
    return f"<{type(e).__name__}>"


def tensor_str(tensor: Tensor) -> str:
    """The definition of `tensor`: ``C[i, j] = ...`` or ``A = placeholder((n, m), float32)``."""
    op = tensor.op
    if isinstance(op, ComputeOp):
        axes = ", ".join(iv.var.name for iv in op.axis)
        return f"{op.name}[{axes}] = {expr_str(op.expr)}"
    shape = ", ".join(expr_str(s) for s in op.shape)
    if len(op.shape) == 1:
        shape += ","
    return f"{op.name} = placeholder(({shape}), {op.dtype})"
