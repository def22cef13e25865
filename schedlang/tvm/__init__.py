"""TVM's Tensor Expression API on schedlang: ``import schedlang.tvm as tvm`` and
``from schedlang.tvm import te``, and a TE program runs with only its imports changed.

TVM dropped Tensor Expression schedules; this package keeps TE's names and calling conventions
(targets, devices, ``tvm.nd`` arrays, built modules with ``time_evaluator``, ``get_source``,
``export_library``) and maps each onto schedlang's own API, which does the work: the algorithm
and schedule are schedlang's, checked by isl, compiled by llvmlite. What TE has and schedlang
does not yet is refused with a `TVMError` that says so, never approximated.
"""

from __future__ import annotations

from ..errors import SchedlangError as TVMError
from . import (
    _ffi,
    arith,
    autotvm,
    container,
    contrib,
    error,
    ir,
    nd,
    runtime,
    target,
    te,
    tir,
    topi,
    transform,
)
from .driver import build, lower
from .ir_module import IRModule
from .packed import get_global_func, register_func
from .runtime import Device, Module, NDArray, cl, cpu, cuda, device, gpu, opencl, rocm

__all__ = [
    "_ffi",
    "Device",
    "IRModule",
    "Module",
    "NDArray",
    "TVMError",
    "arith",
    "autotvm",
    "build",
    "container",
    "cl",
    "contrib",
    "cpu",
    "cuda",
    "device",
    "error",
    "get_global_func",
    "gpu",
    "ir",
    "lower",
    "nd",
    "opencl",
    "register_func",
    "rocm",
    "runtime",
    "target",
    "te",
    "tir",
    "topi",
    "transform",
]
