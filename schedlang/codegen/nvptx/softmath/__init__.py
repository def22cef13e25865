"""Float math written in LLVM IR by schedlang, for a GPU without NVIDIA's libdevice.

Each function is an ordinary LLVM definition, ``sl.exp`` (double) or ``sl.expf`` (float), built
from IEEE additions, multiplications, divisions, fma, integer bit operations and a 2/pi table:
no fast-math flags, no flush-to-zero, and NaN, infinities, signed zeros, overflow and subnormal
results as C99 and numpy have them. The CUDA target links the library into a module that
calls it (`nvptx.compile`) where libdevice is missing or ``SCHEDLANG_LIBDEVICE=none``; the
host JIT compiles the very same IR for measuring it (`host`, ``benchmarks/ulp.py``), and
because every fused operation is an explicit ``llvm.fma`` both give the same bits.

The float functions evaluate the double ones and round once, so they are correctly rounded
except within a tiny fraction of an ulp of a rounding boundary; the double ones are within
about an ulp (docs/math.md has the measured maxima). pow exists for float only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from llvmlite import ir

from .emit import F32, F64, Emit

_DOUBLE = ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "erf")  # and their float forms
FUNCTIONS = (*_DOUBLE, "pow")
PREFIX = "sl."


def symbol(name: str, dtype: str) -> str | None:
    """The library's function for math `name` in `dtype` (float32 or float64), or None where
    it has none (float64 pow)."""
    if name not in FUNCTIONS or (name == "pow" and dtype == "float64"):
        return None
    return f"{PREFIX}{name}f" if dtype == "float32" else f"{PREFIX}{name}"


def _bodies() -> dict[str, Callable[..., ir.Value]]:
    """The double functions' emitters, imported when the library is built: the CUDA target
    imports this package for its names, and most kernels never call the library."""
    from . import erf, exp, log, tanh, trig

    return {
        "exp": exp.exp,
        "exp2": exp.exp2,
        "log": log.log,
        "log2": log.log2,
        "sin": trig.sin,
        "cos": trig.cos,
        "tanh": tanh.tanh,
        "erf": erf.erf,
    }


def define(module: ir.Module) -> None:
    """Add every function of the library to `module`."""
    from . import power

    fns: dict[str, ir.Function] = {}
    for name in _DOUBLE:
        fns[name] = ir.Function(module, ir.FunctionType(F64, [F64]), f"{PREFIX}{name}")
        fns[name + "f"] = ir.Function(module, ir.FunctionType(F32, [F32]), f"{PREFIX}{name}f")
    fns["powf"] = ir.Function(module, ir.FunctionType(F32, [F32, F32]), f"{PREFIX}powf")
    for name, body in _bodies().items():
        e = _entry(fns[name])
        extra = [fns["exp"]] if name == "erf" else []
        e.b.ret(body(e, fns[name].args[0], *extra))
        e = _entry(fns[name + "f"])
        wide = e.b.fpext(fns[name + "f"].args[0], F64)
        e.b.ret(e.b.fptrunc(e.call(fns[name], wide), F32))
    e = _entry(fns["powf"])
    e.b.ret(power.powf(e, *fns["powf"].args, fns["exp"], fns["log"]))


def _entry(fn: ir.Function) -> Emit:
    return Emit(ir.IRBuilder(fn.append_basic_block("entry")))


@functools.cache
def library() -> str:
    """The library as LLVM IR text, with no triple (the linking target sets its own)."""
    module = ir.Module("schedlang.softmath")
    define(module)
    return str(module)
