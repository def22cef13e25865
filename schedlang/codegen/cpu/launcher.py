"""``cuLaunchKernel`` called from machine code, its arguments read from a table.

cuda-python's ``cuLaunchKernel`` converts eleven Python arguments and wraps its result in an
enum on every call, and ctypes with the driver's own symbol converts eleven arguments too;
either costs about a microsecond beside the driver's work, which a kernel's usual call
(`runtime.usual_calls`) pays on each call. Here the arguments lie in a table of 64-bit words
filled once per launch shape (the function, grid, block, shared bytes, kernel parameters), the
caller writes the stream into it, and one ctypes call of one argument runs the launch:
``launch(table)`` returns the driver's ``CUresult``.

Table words: 0 the address of ``cuLaunchKernel``, 1 the ``CUfunction``, 2-4 the grid, 5-7 the
block, 8 the dynamic shared bytes, 9 the stream, 10 the kernel parameters (``void**``), 11 the
extra options (0).
"""

from __future__ import annotations

import ctypes
import functools

from llvmlite import ir

from . import jit as cpu_jit
from . import linker

STREAM = 9
WORDS = 12
_I32, _I64 = ir.IntType(32), ir.IntType(64)
_NAME = "schedlang_launch"


@functools.cache
def launcher() -> tuple[object, ctypes._CFuncPtr]:
    """The launch function (see the module) and what keeps its machine code loaded."""
    module = ir.Module(name="launcher")
    module.triple = cpu_jit.host().target.triple
    module.data_layout = str(cpu_jit.host().machine.target_data)
    fn = ir.Function(module, ir.FunctionType(_I32, [_I64.as_pointer()]), _NAME)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = fn.args[0]
    words = [b.load(b.gep(table, [ir.Constant(_I32, k)])) for k in range(WORDS)]
    launch_t = ir.FunctionType(_I32, [_I64] + [_I32] * 7 + [_I64] * 3)
    target = b.inttoptr(words[0], launch_t.as_pointer())
    args = [words[1], *(b.trunc(words[k], _I32) for k in range(2, 9)), *words[9:]]
    b.ret(b.call(target, args))
    text = str(module)
    linked, address = linker.link(cpu_jit.object_code(text), _NAME, {}, text)
    return linked, ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(address)


def table(
    launch: int,
    function: int,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared: int,
    params: int,
) -> ctypes.Array:
    """A launch's table, its stream word left for the caller."""
    return (ctypes.c_uint64 * WORDS)(launch, function, *grid, *block, shared, 0, params, 0)
