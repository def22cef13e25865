"""``transform_layout``: a tensor stored in another order (TE's ``Stage.transform_layout``).

``s[T].transform_layout(lambda i, j: [j, i])`` keeps T's element ``T[i, j]`` at ``[j, i]`` of
its buffer: the caller's array of an input or output has the transformed shape, and every
store and load of T goes through the map. The map must take T's elements one to one onto a
box from 0 (a permutation of the dimensions, a dimension split into ``i // c, i % c`` where
``c`` divides it, dimensions flattened into one, ...): nothing is padded and nothing is lost,
which is checked here: where each index of the buffer is a sum of digits of the dimensions
(``i``, ``i // b``, ``i % a``, ``(i % a) // b``, each times a constant), each dimension's
digits a whole mixed-radix numeral of it and each sum a numeral of its digits, by that form
at any size; else element by element for a constant shape; a symbolic shape may only be
permuted. The loops keep their logical order (TE reorders them
to the new layout), and the values are the algorithm's: `sl.reference` gives them in the
logical layout.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from ..ir.evaluate import reference
from ..ir.expr import Binary, Const, Expr, Var, as_expr
from ..ir.tensor import compute
from ..ir.visit import substitute, walk
from .errors import message

# TE's mark between the groups of dimensions of a buffer flattened to several (2-D physical
# layouts); schedlang's buffers keep every dimension, so it changes nothing.
AXIS_SEPARATOR = "axis_separator"
_LARGEST = 1 << 26  # elements checked one by one


class LayoutError(ScheduleError):
    """A layout map that is not one to one onto a box (it would pad or lose elements)."""


@dataclass(frozen=True, slots=True)
class TransformLayout:
    """The record of ``s[T].transform_layout(...)``: T's element at `index` (one variable
    per dimension) is stored at `physical` of a buffer of `shape`."""

    stage: str
    index: tuple[Var, ...]
    physical: tuple[Expr, ...]
    shape: tuple[Expr, ...]
    loc: str = ""

    def indices(self, logical: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """The buffer's index of the element at `logical`."""
        return tuple(substitute(e, dict(zip(self.index, logical))) for e in self.physical)


def layout_of(stage, mapping, loc: str) -> TransformLayout:
    """The record of `mapping` (called with one index variable per dimension) for `stage`'s
    tensor, checked."""
    shape = tuple(stage.op.shape)
    names, by_keyword = _parameters(mapping, len(shape))
    index = tuple(Var(name, "int32", "axis") for name in names)
    keywords = dict(zip(names[len(names) - by_keyword :], index[len(index) - by_keyword :]))
    given = mapping(*index[: len(index) - by_keyword], **keywords)
    given = list(given) if isinstance(given, (list, tuple)) else [given]
    physical = tuple(as_expr(e) for e in given if not _is_separator(e))
    call = "transform_layout(...)"

    def fail(what: str) -> None:
        raise LayoutError(message(stage.name, call, loc, what))

    ours = set(map(id, index))
    for e in physical:
        stray = [
            v for v in walk(e) if isinstance(v, Var) and v.kind != "size" and id(v) not in ours
        ]
        if stray or not e.dtype.startswith(("int", "uint")):
            fail(f"the map gives {e}, which is not an integer of the index variables")
    if all(isinstance(n, Const) for n in shape):
        sizes = [int(n.value) for n in shape]
        out_shape = _numerals(sizes, index, physical) or _enumerated(shape, index, physical, fail)
    else:
        out_shape = _permuted(shape, index, physical, fail)
    return TransformLayout(stage.name, index, physical, out_shape, loc)


def _parameters(mapping, count: int) -> tuple[list[str], int]:
    """Names for the `count` indices, and how many of the last ones are passed by keyword: the
    map's own names (``lambda n, c, h, w``), with TE's ``lambda *rest, w`` giving its
    keyword-only names the last indices; else i0, i1, ..."""
    try:
        params = list(inspect.signature(mapping).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    rest = any(p.kind is p.VAR_POSITIONAL for p in params)
    if len(named) + len(keyword) == count or (rest and len(named) + len(keyword) <= count):
        middle = [f"i{k}" for k in range(len(named), count - len(keyword))]
        return [*named, *middle, *keyword], len(keyword)
    return [f"i{k}" for k in range(count)], 0


def _is_separator(e: object) -> bool:
    return isinstance(e, str) and e == AXIS_SEPARATOR


def _enumerated(shape, index, physical, fail) -> tuple[Expr, ...]:
    """The box `physical` maps the constant `shape` onto, every element checked."""
    sizes = [int(n.value) for n in shape]
    count = int(np.prod(sizes, dtype=np.int64))
    if count > _LARGEST:
        fail(f"the tensor has {count} elements, more than the {_LARGEST} checked one by one")
    values = []
    for e in physical:
        grid = compute(
            tuple(shape), lambda *ix, e=e: substitute(e, dict(zip(index, ix))), name="layout"
        )
        values.append(np.asarray(reference(grid, {})).reshape(-1).astype(np.int64))
    if not values:
        values = [np.zeros(count, np.int64)]
    extents = []
    for v in values:
        if v.size and v.min() < 0:
            fail("the map gives negative indices; the buffer's indices start at 0")
        extents.append(int(v.max()) + 1 if v.size else 1)
    if int(np.prod(extents, dtype=np.int64)) != count:
        fail(
            f"the map takes the {count} elements onto a box of shape {tuple(extents)}: it "
            "would pad the buffer; use a map that divides the dimensions evenly"
        )
    flat = np.ravel_multi_index(tuple(values), extents)
    if np.unique(flat).size != count:
        fail("the map sends two elements to one place; use a one-to-one map")
    return tuple(as_expr(n) for n in extents)


def _numerals(sizes: list[int], index, physical) -> tuple[Expr, ...] | None:
    """The box's shape where the map takes digits apart and puts them together again: each
    of `physical` a sum of digits ``(i % a) // b`` of the index variables, each times a
    constant, and
    - each variable's digits, ordered by `b`, its whole numeral (the first ``b`` is 1, each
      ``a`` the next ``b``, the last ``a`` its extent, each ``b`` dividing its ``a``);
    - each sum's digits, ordered by their constants, a numeral of its own (the first constant
      1, each the product of the one before and that digit's count of values).
    Then the map is one to one onto the box whatever the size (``[j // 4, i, j % 4]``, a
    tile; ``[i * n + j]``, dimensions flattened). None where the map has another form (it is
    checked element by element)."""
    sums = [_sum_of_digits(e, sizes, index) for e in physical]
    if any(terms is None for terms in sums):
        return None
    digits = [digit for terms in sums for _, digit in terms]
    for k, size in enumerate(sizes):
        mine = sorted((b, a) for v, a, b in digits if v == k)
        low = 1
        for b, a in mine:
            if b != low or a % b:
                return None
            low = a
        if low != size:
            return None
    extents = []
    for terms in sums:
        place = 1
        for times, (_, a, b) in sorted(terms, key=lambda term: term[0]):
            if times != place:
                return None
            place *= a // b
        extents.append(as_expr(place))
    return tuple(extents)


def _sum_of_digits(e: Expr, sizes: list[int], index) -> list | None:
    """``[(constant, digit), ...]`` where `e` is a sum of digits (`_digit`) each times a
    positive constant, else None."""
    if isinstance(e, Binary) and e.op == "+":
        a, b = _sum_of_digits(e.a, sizes, index), _sum_of_digits(e.b, sizes, index)
        return None if a is None or b is None else a + b
    times = 1
    if isinstance(e, Binary) and e.op == "*":
        for factor, other in ((e.b, e.a), (e.a, e.b)):
            if isinstance(factor, Const) and int(factor.value) > 0:
                e, times = other, int(factor.value)
                break
        else:
            return None
    digit = _digit(e, sizes, index)
    return None if digit is None else [(times, digit)]


def _digit(e: Expr, sizes: list[int], index) -> tuple[int, int, int] | None:
    """``(dimension, a, b)`` where `e` is ``(i % a) // b`` (``a`` the extent without the
    ``%``, ``b`` 1 without the ``//``) of a dimension whose extent `a` divides."""
    b = 1
    if isinstance(e, Binary) and e.op == "//" and isinstance(e.b, Const):
        e, b = e.a, int(e.b.value)
    a = None
    if isinstance(e, Binary) and e.op == "%" and isinstance(e.b, Const):
        e, a = e.a, int(e.b.value)
    position = [k for k, v in enumerate(index) if v is e]
    if not position or b <= 0:
        return None
    size = sizes[position[0]]
    a = size if a is None or a >= size else a
    if a <= 0 or size % a:
        return None
    return position[0], a, b


def _permuted(shape, index, physical, fail) -> tuple[Expr, ...]:
    """The permuted symbolic `shape`, where `physical` permutes the index variables."""
    if sorted(map(id, physical)) != sorted(map(id, index)) or len(physical) != len(index):
        fail(
            "the tensor's shape is symbolic, and its layout may then only permute its "
            "dimensions (lambda i, j: [j, i])"
        )
    position = {id(v): k for k, v in enumerate(index)}
    return tuple(shape[position[id(e)]] for e in physical)
