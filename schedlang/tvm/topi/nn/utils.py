"""``topi.nn.utils``: how TOPI's convolutions read their `padding` argument."""

from __future__ import annotations

from ....errors import AlgorithmError


def get_pad_tuple(padding, kernel) -> tuple:
    """(top, left, bottom, right) from an int, a pair (each side of a dimension the same), a
    4-tuple (as given), "VALID" (none) or "SAME" (the output keeps the input's size; an odd
    total puts the extra element on top and left)."""
    if isinstance(padding, (tuple, list)):
        if len(padding) == 4:
            return tuple(padding)
        if len(padding) != 2:
            raise AlgorithmError(f"padding {padding}: give 2 or 4 sizes")
        pad_h, pad_w = padding[0] * 2, padding[1] * 2
    elif isinstance(padding, int):
        pad_h = pad_w = padding * 2
    elif padding == "VALID":
        pad_h = pad_w = 0
    elif padding == "SAME":
        pad_h, pad_w = kernel[0] - 1, kernel[1] - 1
    else:
        raise AlgorithmError(f"padding {padding!r}: give sizes, 'VALID' or 'SAME'")
    top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
    return top, left, pad_h - top, pad_w - left


def pair(value, what: str) -> tuple:
    """An int or a pair as a pair (strides, dilations)."""
    if isinstance(value, int):
        return value, value
    if len(value) != 2:
        raise AlgorithmError(f"{what} {value}: give one int or two")
    return tuple(value)
