"""Concrete values for the symbolic sizes of an algorithm, given by name or by variable.

Pictures and comparisons run or enumerate a schedule at one size; users name sizes as they
name them everywhere else (``M=64`` or ``{M: 64}`` with ``M = sl.var("M")``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..ir.evaluate import _size_value
from ..ir.expr import Expr, Var
from ..ir.visit import walk


def size_vars(shapes: Iterable[Iterable[Expr]]) -> dict[str, Var]:
    """The symbolic sizes in `shapes`, by name."""
    found: dict[str, Var] = {}
    for shape in shapes:
        for extent in shape:
            for node in walk(extent):
                if isinstance(node, Var) and node.kind == "size":
                    found.setdefault(node.name, node)
    return found


def bind_sizes(
    shapes: Iterable[Iterable[Expr]],
    sizes: Mapping[object, int],
    what: str,
    complete: bool = True,
) -> dict[Var, int]:
    """The sizes of `shapes` bound to their values in `sizes` (keys: names or `Var`s); a
    ValueError naming `what` (the call) for an unknown name, and with `complete` for a size
    left without a value."""
    shapes = [tuple(shape) for shape in shapes]
    by_name = size_vars(shapes)
    bound: dict[Var, int] = {}
    for key, value in sizes.items():
        name = key.name if isinstance(key, Var) else str(key)
        if name not in by_name:
            known = ", ".join(by_name) or "none"
            raise ValueError(f"{what}: '{name}' is not a size of these tensors (they have {known})")
        bound[by_name[name]] = int(value)
    missing = [name for name, v in by_name.items() if v not in bound]
    if missing and complete:
        example = ", ".join(f"{name}=64" for name in missing)
        raise ValueError(f"{what}: give a value for each symbolic size, e.g. {example}")
    return bound


def shape_of(shape: Iterable[Expr], bound: Mapping[Var, int]) -> tuple[int, ...]:
    """`shape` evaluated at the sizes `bound`."""
    return tuple(_size_value(extent, bound) for extent in shape)
