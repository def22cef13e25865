"""``tvm.te``: TE's algorithm and schedule names, which are schedlang's, with TE's spellings of
shapes (integral floats such as ``N / bn``) and of thread axes (a range before the tag)."""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Mapping

import schedlang as _sl
from schedlang import (  # noqa: F401 - re-exported under TE's names
    Tensor,
    abs,
    all,
    any,
    ceil,
    comm_reducer,
    const,
    cos,
    create_schedule,
    erf,
    exp,
    exp2,
    floor,
    gradient,
    if_then_else,
    log,
    log2,
    max,
    max_value,
    min,
    min_value,
    pow,
    reduce_axis,
    round,
    rsqrt,
    scan,
    sigmoid,
    sin,
    sqrt,
    sum,
    tanh,
)
from schedlang.ir.tensor import ComputeOp, PlaceholderOp  # noqa: F401 - TE's op classes

from ...errors import AlgorithmError, ScheduleError
from ...ir.dtype import is_float
from ...schedule.layout import AXIS_SEPARATOR  # noqa: F401 - te.AXIS_SEPARATOR
from .. import schedule  # noqa: F401 - TE's te.schedule (Split, Fuse, Stage, ...)
from .. import te_tensor as tensor  # noqa: F401 - te.tensor.Tensor, ComputeOp, ...
from ..tag import TagScope, scoped_tag, tag_scope  # noqa: F401 - TagScope, tag_scope re-exported
from ..tensor_intrin import decl_tensor_intrin  # noqa: F401
from ..tir import floordiv, floormod, truncdiv  # noqa: F401 - te.floordiv, te.floormod
from . import hybrid  # noqa: F401 - te.hybrid.script

power = pow


def trunc(x):
    """TE's ``trunc``: `x` rounded toward zero."""
    return if_then_else(x >= 0, floor(x), ceil(x))


def div(a, b):
    """TE's ``div``: true division of floats, C's (toward zero) of integers."""
    a_dtype = getattr(a, "dtype", "float32" if isinstance(a, float) else "int32")
    return a / b if is_float(a_dtype) else truncdiv(a, b)


def var(name: str = "tindex", dtype: str = "int32", span: object = None) -> _sl.Var:
    return _sl.var(name, dtype)


size_var = var


def placeholder(shape: object, dtype: str | None = None, name: str = "placeholder") -> Tensor:
    return _sl.placeholder(_shape(shape, name), "float32" if dtype is None else dtype, name=name)


def compute(
    shape: object,
    fcompute,
    name: str = "compute",
    tag: str = "",
    attrs: object = None,
    varargs_names: object = None,
) -> Tensor:
    """TE's compute: the tag defaults to the `tag_scope` entered, `attrs` values are kept
    as TE converts them (numbers as constants with ``.value``, lists as tuples), and
    `varargs_names` names the axes of a function of ``*indices``."""
    kept = None if attrs is None else _attr_value(attrs)
    if varargs_names is not None:
        fcompute = _named_indices(fcompute, list(varargs_names))
    return _sl.compute(
        _shape(shape, name), fcompute, name=name, tag=scoped_tag(tag, name), attrs=kept
    )


def _named_indices(fcompute, names: list):
    """`fcompute` (a function of ``*indices``) as a function whose arguments are `names`,
    which schedlang gives the axes."""

    def named(*indices):
        return fcompute(*indices)

    kind = inspect.Parameter.POSITIONAL_ONLY
    named.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
    return named


def _attr_value(value: object) -> object:
    if isinstance(value, Mapping):
        return {str(k): _attr_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_attr_value(v) for v in value)
    if isinstance(value, (bool, int, float)):
        return const(value)
    return value


def extern(
    shape: object,
    inputs: list,
    fcompute,
    name: str = "extern",
    dtype: object = None,
    in_buffers: object = None,
    out_buffers: object = None,
    tag: str = "",
    attrs: object = None,
) -> Tensor:
    """TE's extern stage: `fcompute(ins, outs)` returns ``tvm.tir.call_packed(...)``."""
    if in_buffers is not None or out_buffers is not None:
        raise AlgorithmError(
            f"extern '{name}': in_buffers/out_buffers (buffers declared by hand) are not "
            "supported; schedlang hands the function whole compact arrays"
        )
    several = isinstance(shape, (list, tuple)) and bool(shape)
    if several and builtins.all(isinstance(s, (list, tuple)) for s in shape):
        shapes = [_shape(tuple(s), name) for s in shape]  # one per output
        return _sl.extern(shapes, inputs, fcompute, name=name, dtype=dtype)
    return _sl.extern(_shape(shape, name), inputs, fcompute, name=name, dtype=dtype)


def thread_axis(dom: object = None, tag: str = "", name: str = "", span: object = None):
    """A hardware index; TE's ``thread_axis((0, n), "threadIdx.x")`` names the range the loop
    bound to it must cover, which schedlang reads off the loop itself."""
    if isinstance(dom, str) and not tag:
        dom, tag = None, dom
    if dom is not None and not (isinstance(dom, (tuple, list)) and len(dom) == 2):
        raise ScheduleError(f"thread_axis: the range is (begin, end), not {dom!r}")
    return _sl.thread_axis(tag or "vthread", name)


def _shape(shape: object, name: str) -> object:
    """TE's shapes as schedlang's: a float of integral value (``1024 / 32``) is that integer."""
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for extent in dims:
        if isinstance(extent, float):
            if not extent.is_integer():
                raise AlgorithmError(f"'{name}': the extent {extent} is not an integer")
            extent = int(extent)
        out.append(extent)
    return tuple(out)
