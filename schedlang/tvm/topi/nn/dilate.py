"""``topi.nn.dilate``: the data spread out by `strides`, zeros (or `dilation_value`) between
(``DilatedInput``, tagged "injective,dilate"); transposed convolutions start with it."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ..tag import INJECTIVE
from ..utils import simplified


def dilate(data, strides, dilation_value=0.0, name="DilatedInput"):
    if len(strides) != data.ndim:
        raise AlgorithmError(f"dilate: {data.ndim} dimensions but strides {list(strides)}")
    shape = simplified((n - 1) * s + 1 for n, s in zip(data.shape, strides))
    fill = _sl.const(dilation_value, data.dtype)

    def element(*i):
        on_grid = [x % s == 0 for x, s in zip(i, strides) if s != 1]
        source = data[tuple(x // s if s != 1 else x for x, s in zip(i, strides))]
        return _sl.if_then_else(_sl.all(*on_grid), source, fill) if on_grid else source

    return _sl.compute(shape, element, name=name, tag=INJECTIVE + ",dilate")
