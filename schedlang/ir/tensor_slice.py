"""Chained indexing, ``A[0][i]`` (TE's ``TensorSlice``).

TE-era code indexes one dimension at a time (``x[i][k]``). A tensor indexed with fewer indices
than it has dimensions gives a `TensorSlice`, which only collects indices: indexed further up
to the tensor's rank, it is the read ``A[0, i]``. Being an index or a value before that is the
mistake it always was, and says so with the message a short index always had, at the line that
indexed the tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import AlgorithmError, entry_point

if TYPE_CHECKING:
    from .expr import Expr
    from .tensor import Tensor


def index_count_error(tensor: Tensor, count: int, location: str) -> AlgorithmError:
    """The error of `tensor` read with `count` indices, at `location`."""
    example = ", ".join("ijklmn"[: tensor.ndim])
    return AlgorithmError(
        f"tensor '{tensor.name}' has {tensor.ndim} dimension(s) but is indexed with "
        f"{count} index(es) at {location}: give one index per dimension, "
        f"e.g. {tensor.name}[{example}]"
    )


class TensorSlice:
    """`tensor` indexed in its leading dimensions by `indices`, waiting for the rest."""

    __slots__ = ("tensor", "indices", "location")

    def __init__(self, tensor: Tensor, indices: tuple[object, ...], location: str) -> None:
        self.tensor = tensor
        self.indices = indices
        self.location = location

    @entry_point
    def __getitem__(self, indices: object) -> Expr | TensorSlice:
        more = indices if isinstance(indices, tuple) else (indices,)
        return self.tensor[self.indices + more]

    def incomplete(self) -> AlgorithmError:
        """The error of this slice used where an element belongs."""
        return index_count_error(self.tensor, len(self.indices), self.location)

    def __iter__(self):
        # As for a tensor: Python would otherwise iterate through __getitem__ forever.
        raise TypeError(f"a slice of tensor '{self.tensor.name}' is not iterable: index it")

    def __repr__(self) -> str:
        shown = ", ".join(str(i) for i in self.indices)
        return f"TensorSlice({self.tensor.name}[{shown}], {self.tensor.ndim} dimension(s))"


def _refuse(name: str):
    """An operator of `TensorSlice` that raises its `incomplete` error: ``A[i] * 2`` on a
    2-d tensor is still a read with too few indices."""

    @entry_point
    def refuse(self: TensorSlice, *args: object, **kwargs: object):
        raise self.incomplete()

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
_OPERATORS += ("and", "or", "xor", "lshift", "rshift")
_VALUE_METHODS = [f"__{kind}{name}__" for name in _OPERATORS for kind in ("", "r")]
_VALUE_METHODS += ["__neg__", "__pos__", "__invert__", "__abs__", "__bool__", "__float__"]
_VALUE_METHODS += ["__int__", "__index__", "__array_ufunc__", "astype", "equal"]
_VALUE_METHODS += ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
for _name in _VALUE_METHODS:
    setattr(TensorSlice, _name, _refuse(_name))
