"""Declaring LLVM intrinsics and external functions once per module, with mangled names.

llvmlite's own `declare_intrinsic` knows a fixed list and no vector types, so the translator
names overloaded intrinsics itself: ``llvm.maximum.v8f32``, ``llvm.masked.load.v8f32.p0``.
"""

from __future__ import annotations

from llvmlite import ir


def type_suffix(t: ir.Type) -> str:
    """The overload suffix LLVM gives type `t` in an intrinsic name."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    if isinstance(t, ir.PointerType):
        return f"p{t.addrspace}"
    return t.intrinsic_name


def function(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """The function `name` of `module`, declared with this signature if it is new."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)


def intrinsic(
    module: ir.Module, name: str, overloads: list[ir.Type], ret: ir.Type, args: list[ir.Type]
) -> ir.Function:
    """`name` overloaded on `overloads`: ``llvm.fabs`` on float is ``llvm.fabs.f32``."""
    full = ".".join([name, *(type_suffix(t) for t in overloads)])
    return function(module, full, ret, args)


def call_overloaded(b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """``name(args)`` for the common intrinsics whose result and operands share one type."""
    t = args[0].type
    fn = intrinsic(b.module, name, [t], t, [a.type for a in args])
    return b.call(fn, args)
