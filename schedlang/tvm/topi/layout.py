"""Data layouts as TVM writes them (``"NCHW"``, ``"NCHW16c"``, ``"OIHW4i4o"``) and TOPI's
``layout_transform`` between two of them.

An upper-case letter is a primal dimension; ``16c`` splits the primal ``C`` into blocks of 16,
``c`` being the index inside a block. A transform gives each output dimension the extent TVM's
bijective layout gives it (a primal one split by a factor the data does not fill rounds up),
and reads zero where the rounded-up blocks reach past the data."""

from __future__ import annotations

import re

import schedlang as _sl

from ...errors import AlgorithmError
from .tag import INJECTIVE
from .utils import simplified

_AXIS = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list[tuple[str, int | None]]:
    """The dimensions of `layout`, in order: ``(letter, factor)``, the factor set for a
    sub-dimension (lower case) and None for a primal one."""
    parsed = []
    position = 0
    for match in _AXIS.finditer(layout):
        if match.start() != position:
            break
        digits, letter = match.groups()
        if letter.isupper() == bool(digits):
            break
        parsed.append((letter, int(digits) if digits else None))
        position = match.end()
    letters = [letter for letter, _ in parsed]
    if position != len(layout) or not parsed or len(set(letters)) != len(letters):
        raise AlgorithmError(f"'{layout}' is not a layout such as NCHW or NCHW16c")
    for letter, factor in parsed:
        if factor is not None and letter.upper() not in letters:
            raise AlgorithmError(f"layout '{layout}' splits '{letter.upper()}', which it lacks")
    return parsed


def _factor(parsed, letter: str) -> int | None:
    for name, factor in parsed:
        if name == letter.lower() and factor is not None:
            return factor
    return None


def _primal_extents(parsed, shape) -> dict[str, object]:
    """The extent of each primal dimension of data of `shape` laid out as `parsed`."""
    extents = {}
    for (letter, factor), extent in zip(parsed, shape):
        if factor is None:
            inner = _factor(parsed, letter)
            extents[letter] = extent * inner if inner else extent
    return extents


def _primal_indices(parsed, index) -> dict[str, object]:
    """The index along each primal dimension of the element at `index` laid out as `parsed`."""
    primal = {}
    for (letter, factor), i in zip(parsed, index):
        if factor is None:
            inner = _factor(parsed, letter)
            primal[letter] = primal.get(letter, 0) + (i * inner if inner else i)
        else:
            primal[letter.upper()] = primal.get(letter.upper(), 0) + i
    return primal


def _layout_index(parsed, primal) -> tuple:
    """The index, in layout `parsed`, of the element at primal indices `primal`."""
    index = []
    for letter, factor in parsed:
        if factor is None:
            inner = _factor(parsed, letter)
            index.append(primal[letter] // inner if inner else primal[letter])
        else:
            index.append(primal[letter.upper()] % factor)
    return tuple(index)


def layout_transform(src, src_layout: str, dst_layout: str, schedule_rule: str = "None"):
    """`src`, laid out as `src_layout`, laid out as `dst_layout` (``T_layout_trans``)."""
    source, target = parse_layout(src_layout), parse_layout(dst_layout)
    if source == target:
        return src
    primal_src = sorted(letter for letter, factor in source if factor is None)
    primal_dst = sorted(letter for letter, factor in target if factor is None)
    if primal_src != primal_dst or len(source) != src.ndim:
        raise AlgorithmError(
            f"layout_transform: cannot convert '{src.name}' of {src.ndim} dimensions from "
            f"{src_layout} to {dst_layout}"
        )
    extents = _primal_extents(source, src.shape)
    shape = []
    for letter, factor in target:
        inner = _factor(target, letter) if factor is None else None
        if factor is not None:
            shape.append(factor)
        elif inner:
            shape.append((extents[letter] + inner - 1) // inner)
        else:
            shape.append(extents[letter])

    def value(*index):
        src_index = _layout_index(source, _primal_indices(target, index))
        inside = _sl.all(*(i < n for i, n in zip(src_index, src.shape)))
        return _sl.if_then_else(inside, src[src_index], _sl.const(0, src.dtype))

    attrs = {"schedule_rule": schedule_rule, "src_layout": src_layout, "dst_layout": dst_layout}
    return _sl.compute(simplified(shape), value, name="T_layout_trans", tag=INJECTIVE, attrs=attrs)
