"""``tvm.tir.expr``'s node classes as TOPI tests for them (``isinstance(n, tvm.tir.IntImm)``,
``tvm.tir.SizeVar("n", "int32")``): schedlang has one class of constants and one of variables,
so these classes are views of them by dtype, and calling one makes the schedlang node."""

from __future__ import annotations

import schedlang as _sl
from schedlang.ir import dtype as _dt
from schedlang.ir.expr import Const as _Const
from schedlang.ir.expr import Expr as PrimExpr
from schedlang.ir.expr import Var as _Var


class _View(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return cls._matches(obj)


class IntImm(metaclass=_View):
    """An integer constant: ``IntImm("int32", 5)``."""

    def __new__(cls, dtype: str, value: int, span: object = None):
        return _sl.const(int(value), dtype)

    @staticmethod
    def _matches(obj: object) -> bool:
        return isinstance(obj, _Const) and not _dt.is_float(obj.dtype)


class FloatImm(metaclass=_View):
    """A floating-point constant: ``FloatImm("float32", 0.5)``."""

    def __new__(cls, dtype: str, value: float, span: object = None):
        return _sl.const(float(value), dtype)

    @staticmethod
    def _matches(obj: object) -> bool:
        return isinstance(obj, _Const) and _dt.is_float(obj.dtype)


class Var(metaclass=_View):
    """A variable: ``Var("n", "int32")``."""

    def __new__(cls, name: str, dtype: str = "int32", span: object = None):
        return _sl.var(name, dtype)

    @staticmethod
    def _matches(obj: object) -> bool:
        return isinstance(obj, _Var)


class SizeVar(Var):
    """A size (TVM's non-negative variable); schedlang's sizes are its variables."""


class Any(metaclass=_View):
    """TVM's dimension of a size known only at run time (Relay's ``?``); schedlang's shapes
    have none (a symbolic size is a `Var`), so no expression is one."""

    def __new__(cls, span: object = None):
        raise TypeError("tvm.tir.Any: schedlang has no unknown dimensions; use a te.var size")

    @staticmethod
    def _matches(obj: object) -> bool:
        return False


def Cast(dtype: str, value, span: object = None):  # noqa: N802 - TVM's node name
    """`value` converted to `dtype`."""
    return _sl.const(value, dtype) if isinstance(value, (int, float)) else value.astype(dtype)


__all__ = ["Any", "Cast", "FloatImm", "IntImm", "PrimExpr", "SizeVar", "Var"]
