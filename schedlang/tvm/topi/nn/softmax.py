"""``topi.nn.softmax`` and ``log_softmax`` along one axis, in TOPI's stages: the maximum
(``T_softmax_maxelem``), the exponentials (``T_softmax_exp``), their sum
(``T_softmax_expsum``) and the quotient (``T_softmax_norm``, whose ``attrs["axis"]`` TOPI's
schedules read), all tagged "softmax_output" ("log_softmax_output")."""

from __future__ import annotations

import schedlang as _sl

from ... import te
from ..utils import normalize_axis


class _Along:
    """Index arithmetic of a reduction along `axis`: the full index with a reduce axis put
    at `axis`, and the index of the reduced tensor."""

    def __init__(self, x, axis: int) -> None:
        self.axis = normalize_axis(axis, x.ndim, "softmax")
        self.shape = tuple(n for d, n in enumerate(x.shape) if d != self.axis)
        self.extent = x.shape[self.axis]

    def full(self, index, k):
        return index[: self.axis] + (k,) + index[self.axis :]

    def reduced(self, index):
        return index[: self.axis] + index[self.axis + 1 :]

    def maximum(self, x, tag: str):
        k = _sl.reduce_axis((0, self.extent), name="k")
        return te.compute(
            self.shape, lambda *i: _sl.max(x[self.full(i, k)], axis=k), "T_softmax_maxelem", tag
        )


def softmax(x, axis=-1):
    tag = "softmax_output"
    along = _Along(x, axis)
    max_elem = along.maximum(x, tag)
    exp = te.compute(
        x.shape, lambda *i: _sl.exp(x[i] - max_elem[along.reduced(i)]), "T_softmax_exp", tag
    )
    k = _sl.reduce_axis((0, along.extent), name="k")
    expsum = te.compute(
        along.shape, lambda *i: _sl.sum(exp[along.full(i, k)], axis=k), "T_softmax_expsum", tag
    )
    return te.compute(
        x.shape,
        lambda *i: exp[i] / expsum[along.reduced(i)],
        "T_softmax_norm",
        tag,
        attrs={"axis": along.axis},
    )


def log_softmax(x, axis=-1):
    tag = "log_softmax_output"
    along = _Along(x, axis)
    max_elem = along.maximum(x, tag)
    k = _sl.reduce_axis((0, along.extent), name="k")
    expsum = te.compute(
        along.shape,
        lambda *i: _sl.sum(_sl.exp(x[along.full(i, k)] - max_elem[i]), axis=k),
        tag=tag,
    )
    return te.compute(
        x.shape,
        lambda *i: x[i] - max_elem[along.reduced(i)] - _sl.log(expsum[along.reduced(i)]),
        tag=tag,
        attrs={"axis": along.axis},
    )
