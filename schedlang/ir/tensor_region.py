"""A region of a tensor, ``A[i, 0:16]``: what a tensor intrinsic called inside a compute takes
(TE's ``Tensor[...]`` with slices, the inputs of a TensorComputeOp).

Each dimension is either one index (``i``, an expression of the compute's axes) or a constant
range (``0:16``, the slice's start may be an expression); the ranges, in order, are the
dimensions of the intrinsic's input. A region is an argument of an intrinsic, never a value:
using it as one says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import AlgorithmError, entry_point
from .integers import as_int

if TYPE_CHECKING:
    from .expr import Expr
    from .tensor import Tensor


class TensorRegion:
    """`tensor` at `indices` (each an index or a `(start, extent)` range), at `location`."""

    __slots__ = ("tensor", "indices", "location")

    def __init__(self, tensor: Tensor, indices: tuple, location: str) -> None:
        self.tensor = tensor
        self.indices = tuple(_dimension(tensor, d, i, location) for d, i in enumerate(indices))
        self.location = location

    @property
    def extents(self) -> tuple[int, ...]:
        """The extents of the ranges, in order (the intrinsic's input's shape)."""
        return tuple(i[1] for i in self.indices if isinstance(i, tuple))

    def element(self, inner: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """The tensor's indices of element `inner` of the region (one index per range)."""
        steps = iter(inner)
        return tuple(_at(i[0], next(steps)) if isinstance(i, tuple) else i for i in self.indices)

    def __repr__(self) -> str:
        shown = ", ".join(_shown(i) for i in self.indices)
        return f"TensorRegion({self.tensor.name}[{shown}])"


def _shown(index) -> str:
    if not isinstance(index, tuple):
        return str(index)
    start, extent = index
    low = as_int(start)
    return f"{low}:{low + extent}" if low is not None else f"{start}:{start} + {extent}"


def _at(start: Expr, step: Expr) -> Expr:
    return step if as_int(start) == 0 else start + step


def _dimension(tensor: Tensor, d: int, index: object, location: str):
    from .expr import as_expr

    if not isinstance(index, slice):
        return as_expr(index)
    start = as_expr(0 if index.start is None else index.start)
    stop = as_expr(tensor.shape[d] if index.stop is None else index.stop)
    low, high = as_int(start), as_int(stop)
    if low is not None and high is not None:
        extent = high - low
    else:
        from .tensor import tidy  # ``i * 16 + 16 - i * 16`` is 16

        extent = as_int(tidy(stop - start))
    if index.step not in (None, 1) or extent is None or extent < 1:
        raise AlgorithmError(
            f"tensor '{tensor.name}' sliced as {index.start}:{index.stop}"
            f"{'' if index.step is None else f':{index.step}'} in dimension {d} at {location}: "
            "a region of a tensor takes ranges of a constant extent, without a step"
        )
    return (start, extent)


def _refuse(name: str):
    @entry_point
    def refuse(self: TensorRegion, *args: object, **kwargs: object):
        raise AlgorithmError(
            f"{self!r} at {self.location} is a region of a tensor: the argument of a tensor "
            "intrinsic called in a compute (intrin(A[i, 0:16], ...)), not a value; index each "
            "dimension with one expression to read an element"
        )

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_VALUE_METHODS = [
    f"__{kind}{name}__"
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
    for kind in ("", "r")
]
_VALUE_METHODS += ["__neg__", "__bool__", "__float__", "__int__", "__index__", "astype"]
_VALUE_METHODS += ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
for _name in _VALUE_METHODS:
    setattr(TensorRegion, _name, _refuse(_name))
