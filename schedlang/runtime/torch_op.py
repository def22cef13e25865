"""Kernels as torch operators: ``op = sl.torch_op("mylib::add", kernel)``, then ``op(a, b)``
or ``torch.ops.mylib.add(a, b)``.

torch compiles and traces programs through operators it can reason about: a plain Python call
of a kernel is a graph break for ``torch.compile``, and a tracer cannot know the shape of what
it returns. Registered as a ``torch.library.custom_op``, a kernel is one opaque operator with a
schema and a fake implementation, so ``torch.compile(fullgraph=True)`` keeps it in the graph
and ``torch.library.opcheck`` can test it. The fake implementation needs no kernel run: the
outputs' shapes come from the algorithm's shape expressions (`OutputPlan.shapes`), evaluated
on torch's symbolic sizes while torch traces with dynamic shapes.

The operator is functional, as torch's are: its inputs are the kernel's inputs, and the
outputs the kernel makes are returned (one tensor, or a tuple). Either a built kernel is
registered, for the device it was built for, or a function from the input tensors to a kernel,
called once per distinct (shape, dtype, device) of its inputs and its kernels kept, for every
device: the way to specialise on shapes or dtypes.
"""

from __future__ import annotations

import inspect
import keyword
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..ir.expr import Var
from ..ir.visit import walk
from .cuda.kernel import CudaKernel
from .kernel import Kernel

Built = Kernel | CudaKernel

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*")


def torch_op(name: str, kernel: Built | Callable[..., Built], /, *, outputs: int = 1):
    """Register `kernel` as the torch operator `name` ("namespace::op") and return it.

    `kernel` is a built kernel, or a function taking the input tensors and returning the kernel
    for them (built per shape/dtype/device as it likes; `outputs` then says how many outputs its
    kernels make). ``sl.torch_op`` without `kernel` is a decorator::

        @sl.torch_op("mylib::matmul")
        def matmul(a, b):
            return build_matmul(a.shape, a.dtype)
    """
    torch = _torch()
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"an operator's name is 'namespace::name' ('mylib::add'), not {name!r}")
    if isinstance(kernel, Built):
        names, count = _kernel_signature(kernel)
        devices = ("cuda",) if isinstance(kernel, CudaKernel) else ("cpu",)
        kernels = _Kernels(name, lambda *tensors: kernel, count)
    elif callable(kernel):
        names, count, devices = _builder_signature(kernel), _output_count(outputs), None
        kernels = _Kernels(name, kernel, count)
    else:
        raise TypeError(
            f"sl.torch_op registers a kernel or a function returning one, not "
            f"{type(kernel).__name__}"
        )
    returns = "Tensor" if count == 1 else "(" + ", ".join(["Tensor"] * count) + ")"
    schema = "(" + ", ".join(f"Tensor {n}" for n in names) + ") -> " + returns

    def run(*tensors):
        made = kernels.get(tensors)(*(t.contiguous() for t in tensors))
        return made if count == 1 else tuple(made)

    def fake(*tensors):
        plan = kernels.get(tensors).output_plan
        shapes = plan.shapes([t.shape for t in tensors], {})
        made = [tensors[0].new_empty(shape, dtype=getattr(torch, d)) for shape, d in shapes]
        return made[0] if count == 1 else tuple(made)

    op = torch.library.custom_op(name, run, mutates_args=(), device_types=devices, schema=schema)
    op.register_fake(fake)
    return op


class _Kernels:
    """The kernel for each (shape, dtype, device) of an operator's inputs, made once."""

    def __init__(self, name: str, make: Callable[..., Built], count: int) -> None:
        self.name = name
        self.make = make
        self.count = count
        self.made: dict[tuple, Built] = {}
        self.lock = threading.Lock()

    def get(self, tensors: Sequence[Any]) -> Built:
        key = tuple((tuple(map(_size_key, t.shape)), t.dtype, t.device) for t in tensors)
        with self.lock:
            kernel = self.made.get(key)
        if kernel is not None:
            return kernel
        kernel = self.make(*tensors)
        if not isinstance(kernel, Built):
            raise TypeError(
                f"the function of operator '{self.name}' returned {type(kernel).__name__}, "
                "not a kernel (sl.build's result)"
            )
        plan = kernel.output_plan
        if len(plan.inputs) != len(tensors) or len(plan.made) != self.count:
            raise TypeError(
                f"operator '{self.name}' takes {len(tensors)} tensors and returns {self.count}, "
                f"but its kernel '{kernel.lowered.name}' has {len(plan.inputs)} inputs and makes "
                f"{len(plan.made)} outputs"
            )
        with self.lock:
            return self.made.setdefault(key, kernel)


def _size_key(n: object) -> object:
    """A dimension as a key: torch's symbolic sizes by their expression."""
    return n if isinstance(n, int) else str(n)


def _kernel_signature(kernel: Built) -> tuple[list[str], int]:
    plan = kernel.output_plan
    params = kernel.lowered.params
    if not plan.inputs:
        raise ValueError(f"kernel '{kernel.lowered.name}' has no input tensor to call it with")
    given = set()
    for k in plan.inputs:
        given |= _sizes(params[k])
    for k in plan.made:
        missing = sorted(v.name for v in _sizes(params[k]) - given)
        if missing:
            raise ValueError(
                f"the shape of output '{params[k].name}' of kernel '{kernel.lowered.name}' needs "
                f"size '{missing[0]}', which no input's shape gives; a torch operator's outputs "
                "must follow from its inputs"
            )
    return _schema_names([params[k].name for k in plan.inputs]), len(plan.made)


def _sizes(buffer) -> set[Var]:
    return {v for e in buffer.shape for v in walk(e) if isinstance(v, Var)}


def _builder_signature(function: Callable) -> list[str]:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError) as error:
        raise TypeError(f"cannot read the parameters of {function!r}") from error
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind not in positional for p in parameters) or not parameters:
        raise TypeError(
            "the function of a torch operator takes its input tensors as named positional "
            "parameters (def matmul(a, b): ...), one per tensor"
        )
    return _schema_names([p.name for p in parameters])


def _output_count(outputs: object) -> int:
    if not isinstance(outputs, int) or isinstance(outputs, bool) or outputs < 1:
        raise ValueError(f"outputs= is the number of tensors the operator returns, not {outputs!r}")
    return outputs


def _schema_names(names: list[str]) -> list[str]:
    """`names` as argument names of a torch schema: identifiers, distinct, none of Python's
    keywords or torch's reserved ``self``."""
    found = []
    for k, name in enumerate(names):
        ok = name.isidentifier() and not keyword.iskeyword(name) and name != "self"
        name = name if ok and name not in found else f"arg{k}"
        found.append(name)
    return found


def _torch():
    try:
        import torch
    except ImportError as error:
        raise ImportError("sl.torch_op needs torch (pip install torch)") from error
    return torch
