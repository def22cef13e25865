"""``topi.nn.pad``: a copy of the data with a border of a constant value, the first stage of
TOPI's convolutions and pooling (``pad_temp``, ``PadInput``), which their schedules inline or
compute at the consumer."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ..tag import INJECTIVE
from ..utils import const_value, simplified


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput", attrs=None):
    """`data` with `pad_before`/`pad_after` elements of `pad_value` around each dimension."""
    return padded(data, pad_before, pad_after, pad_value, name, INJECTIVE + ",pad")


def padded(data, pad_before, pad_after, pad_value, name: str, tag: str):
    """`pad` under the tag its caller gives its pad stage (TOPI's C++ operators tag their
    padding "elemwise", its Python ones "injective,pad")."""
    before = list(pad_before)
    after = list(pad_after) if pad_after else list(before)
    if not len(before) == len(after) == data.ndim:
        raise AlgorithmError(
            f"pad: '{data.name}' has {data.ndim} dimensions; {before} before and {after} after"
        )
    value = pad_value if isinstance(pad_value, _sl.Expr) else _sl.const(pad_value, data.dtype)
    shape = simplified(n + b + a for n, b, a in zip(data.shape, before, after))
    edges = [not (const_value(b) == 0 and const_value(a) == 0) for b, a in zip(before, after)]

    def element(*i):
        source = tuple(x - b if edge else x for x, b, edge in zip(i, before, edges))
        inside = []
        for x, n, b, edge in zip(i, data.shape, before, edges):
            if edge:
                inside += [x >= b, x < n + b]
        if not inside:
            return data[source]
        return _sl.if_then_else(_sl.all(*inside), data[source], value)

    return _sl.compute(shape, element, name=name, tag=tag)
