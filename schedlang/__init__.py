"""schedlang: write a tensor algorithm once, try many schedules, run them on CPU or GPU.

``import schedlang as sl``; names follow TVM's Tensor Expression language.
"""

from __future__ import annotations

from . import tune as tune
from .build import build  # binds `build` to the function, not the module of that name
from .display.compare import compare
from .display.pictures import plot_footprint, plot_roofline, plot_tiles
from .errors import (
    AlgorithmError,
    InternalError,
    LaunchError,
    LoweringError,
    SchedlangError,
    SchedlangWarning,
    ScheduleError,
)
from .errors import entry_point as _entry_point
from .ir import hybrid as hybrid
from .ir.evaluate import evaluate, reference
from .ir.expr import Expr, Var, const
from .ir.expr import select as if_then_else
from .ir.extern import call_packed, extern
from .ir.gradient import gradient
from .ir.int4 import packed_int4, unpack_int4
from .ir.intrinsics import call_intrin, call_pure_extern, register_intrin_lowering
from .ir.math import (
    abs,
    ceil,
    cos,
    erf,
    exp,
    exp2,
    fast_exp2,
    floor,
    fma,
    log,
    log2,
    max_value,
    maximum,
    min_value,
    minimum,
    popcount,
    pow,
    round,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
)
from .ir.packed import get_global_func, register_func
from .ir.reduce import Reducer, comm_reducer, max, min, prod, sum
from .ir.scan import scan
from .ir.tensor import IterVar, Tensor, compute, placeholder, reduce_axis, var
from .platform_info import cuda_available
from .runtime.device_array import DeviceArray, array, empty
from .schedule import intrin as intrin
from .schedule.schedule import Schedule, create_schedule, thread_axis
from .schedule.stage import Stage
from .schedule.user_intrin import call_extern, decl_buffer, decl_tensor_intrin

select = if_then_else

__version__ = "0.1.0"


@_entry_point
def lower(s: Schedule, args: list, name: str = "main"):
    """The loop nest of schedule `s` over the buffers of `args`; print it to read it.

    A tensor-core fragment stage that is not tensorized yet prints as plain loops, as TE
    prints it before ``tensorize``; a build refuses it."""
    from .driver import lower as _lower
    from .runtime.extern_calls import extern_ops, lower_with_externs

    if extern_ops(s):
        return lower_with_externs(s, args, lambda ks, kargs: _lower(ks, kargs, name, draft=True))
    return _lower(s, args, name, draft=True)


@_entry_point
def load(path):
    """The kernel saved at `path` by ``kernel.export(path)`` (TE's ``load_module``)."""
    from .runtime.saved import load as load_saved  # LLVM is loaded when a kernel is

    return load_saved(path)


@_entry_point(also=(TypeError, ValueError))
def torch_op(name, kernel=None, /, *, outputs=1):
    """Register a kernel, or a function of the input tensors returning one, as the torch operator
    `name` ("namespace::op"): usable in ``torch.compile(fullgraph=True)``, checked by
    ``torch.library.opcheck`` (`runtime.torch_op`)."""
    if kernel is None:  # used as a decorator
        return lambda function: torch_op(name, function, outputs=outputs)
    from .runtime.torch_op import torch_op as register

    return register(name, kernel, outputs=outputs)


def all(*conditions: object) -> Expr:
    """True where every condition holds (``and`` of bool expressions)."""
    from .ir.expr import logical

    return logical("and", conditions)


@_entry_point
def any(*conditions: object) -> Expr:
    """True where some condition holds (``or`` of bool expressions)."""
    from .ir.expr import logical

    return logical("or", conditions)


__all__ = [
    "AlgorithmError",
    "DeviceArray",
    "Expr",
    "InternalError",
    "IterVar",
    "LaunchError",
    "LoweringError",
    "Schedule",
    "Stage",
    "build",
    "call_extern",
    "call_intrin",
    "call_packed",
    "call_pure_extern",
    "create_schedule",
    "cuda_available",
    "load",
    "torch_op",
    "lower",
    "thread_axis",
    "Reducer",
    "ScheduleError",
    "SchedlangError",
    "SchedlangWarning",
    "Tensor",
    "Var",
    "abs",
    "all",
    "any",
    "array",
    "ceil",
    "comm_reducer",
    "compare",
    "compute",
    "const",
    "cos",
    "decl_buffer",
    "decl_tensor_intrin",
    "empty",
    "erf",
    "evaluate",
    "exp",
    "extern",
    "exp2",
    "fast_exp2",
    "floor",
    "fma",
    "get_global_func",
    "gradient",
    "if_then_else",
    "log",
    "log2",
    "max",
    "max_value",
    "maximum",
    "min",
    "min_value",
    "minimum",
    "packed_int4",
    "placeholder",
    "plot_footprint",
    "plot_roofline",
    "plot_tiles",
    "pow",
    "prod",
    "reduce_axis",
    "reference",
    "register_func",
    "register_intrin_lowering",
    "round",
    "popcount",
    "rsqrt",
    "scan",
    "select",
    "sigmoid",
    "sin",
    "sqrt",
    "sum",
    "tanh",
    "unpack_int4",
    "var",
]
