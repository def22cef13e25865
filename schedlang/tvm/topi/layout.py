"""TOPI's ``layout_transform``: data laid out as one layout (``"NCHW"``, ``"NCHW16c"``), laid out
as another (``T_layout_trans``, tagged "injective"); where the target's blocks reach past the
data (a block size that does not divide a dimension), zeros."""

from __future__ import annotations

import schedlang as _sl

from ...errors import AlgorithmError
from ..data_layout import Layout, bijective_layout
from .tag import INJECTIVE
from .utils import simplified


def layout_transform(src, src_layout: str, dst_layout: str, schedule_rule: str = "None"):
    source, target = Layout(src_layout), Layout(dst_layout)
    if source == target:
        return src
    if len(source) != src.ndim or sorted(source.primal()) != sorted(target.primal()):
        raise AlgorithmError(
            f"layout_transform: cannot convert '{src.name}' of {src.ndim} dimensions from "
            f"{src_layout} to {dst_layout}"
        )
    convert = bijective_layout(source, target)

    def value(*index):
        src_index = convert.backward_index(index)
        inside = _sl.all(*(i < n for i, n in zip(src_index, src.shape)))
        return _sl.if_then_else(inside, src[src_index], _sl.const(0, src.dtype))

    attrs = {"schedule_rule": schedule_rule, "src_layout": src_layout, "dst_layout": dst_layout}
    shape = simplified(convert.forward_shape(src.shape))
    return _sl.compute(shape, value, name="T_layout_trans", tag=INJECTIVE, attrs=attrs)
