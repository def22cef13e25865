"""The soft math library compiled for the host CPU, applied elementwise to numpy arrays: how
its accuracy is measured and tested without a GPU. The IR is `softmath.library`'s, the one
the CUDA target links, so the values are the ones a GPU computes.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np
from llvmlite import ir

from ...cpu import jit as cpu_jit
from ...cpu import linker
from ...llvm.control import for_range
from . import FUNCTIONS, define, symbol
from .emit import I32, I64

_ENTRY = "sl.apply"


@functools.cache
def _compiled() -> tuple[object, int, dict[str, int]]:
    """One exported entry, ``void sl.apply(i32 which, ptr out, ptr a, ptr b, i64 n)``, that
    applies function number `which` elementwise (b is read by pow only)."""
    module = ir.Module("schedlang.softmath.host")
    define(module)
    targets = [symbol(name, dtype) for name in FUNCTIONS for dtype in ("float32", "float64")]
    targets = [t for t in targets if t is not None]
    ptr = ir.IntType(8).as_pointer()
    entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [I32, ptr, ptr, ptr, I64]), _ENTRY)
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    which, out, a, second, n = entry.args
    done = entry.append_basic_block("done")
    switch = b.switch(which, done)
    for number, target in enumerate(targets):
        block = entry.append_basic_block(target)
        switch.add_case(ir.Constant(I32, number), block)
        b.position_at_end(block)
        _apply_loop(b, module.globals[target], out, [a, second], n)
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    text = str(module)
    tracker, address = linker.link(cpu_jit.object_code(text), _ENTRY, {}, text)
    return tracker, address, {t: number for number, t in enumerate(targets)}


def _apply_loop(
    b: ir.IRBuilder, fn: ir.Function, out: ir.Value, ins: list[ir.Value], n: ir.Value
) -> None:
    """``out[i] = fn(ins[0][i], ...)`` for i < n."""
    t = fn.function_type.return_type
    out = b.bitcast(out, t.as_pointer())
    ins = [b.bitcast(p, t.as_pointer()) for p in ins[: len(fn.args)]]
    with for_range(b, ir.Constant(I64, 0), n) as i:
        args = [b.load(b.gep(p, [i])) for p in ins]
        b.store(b.call(fn, args), b.gep(out, [i]))


def function(name: str, dtype: str) -> Callable[..., np.ndarray]:
    """`name` in `dtype` from the library, as a function of numpy arrays (same shape)."""
    target = symbol(name, dtype)
    if target is None:
        raise ValueError(f"the soft math library has no {name} for {dtype}")
    _, address, numbers = _compiled()  # the cache keeps the code loaded
    which = numbers[target]
    proto = ctypes.CFUNCTYPE(
        None, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64
    )
    call = proto(address)

    def apply(*arrays: np.ndarray) -> np.ndarray:
        ins = [np.ascontiguousarray(a, dtype=dtype) for a in np.broadcast_arrays(*arrays)]
        out = np.empty_like(ins[0])
        pointers = [a.ctypes.data for a in ins] + [0] * (2 - len(ins))
        call(which, out.ctypes.data, *pointers, out.size)
        return out

    return apply
