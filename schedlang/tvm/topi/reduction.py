"""TOPI's reductions (``topi.sum``, ``max``, ``min``, ``prod``, ``all``, ``any``, ``argmax``,
``argmin``) as its C++ library defines them: the axes (None for all, negative ones counted from
the back) are sorted and deduplicated, reduced by axes named ``k<dim>``, into a compute named
``<input>_red`` tagged "comm_reduce"; without `keepdims` a full reduction is a 0-d tensor.
argmax and argmin reduce (flat index, value) pairs in ``<input>_red_temp`` (tag
"comm_reduce_idx") and keep the index, the first of equal values unless `select_last_index`."""

from __future__ import annotations

import schedlang as _sl

from ...errors import AlgorithmError
from .tag import COMM_REDUCE, COMM_REDUCE_IDX
from .utils import normalize_axis


def real_axes(data, axis) -> list[int]:
    if data.ndim == 0:
        raise AlgorithmError(f"cannot reduce the 0-d tensor '{data.name}'")
    if axis is None:
        return list(range(data.ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted({normalize_axis(int(a), data.ndim, "reduction") for a in axes})


def _reduced_shape(data, axes, keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(data.shape))
    return tuple(n for d, n in enumerate(data.shape) if d not in axes)


def source_index(data, axes, reduce_axes, index, keepdims: bool) -> tuple:
    """The element of `data` that output `index` reads at the reduce axes' point."""
    kept = iter(index if not keepdims else [i for d, i in enumerate(index) if d not in axes])
    red = iter(reduce_axes)
    return tuple(next(red) if d in axes else next(kept) for d in range(data.ndim))


def _reduce(data, axis, keepdims: bool, reducer):
    axes = real_axes(data, axis)
    reduce_axes = [_sl.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]

    def value(*index):
        source = data[source_index(data, axes, reduce_axes, index, keepdims)]
        return reducer(source, axis=reduce_axes)

    shape = _reduced_shape(data, axes, keepdims)
    return _sl.compute(shape, value, name=f"{data.name}_red", tag=COMM_REDUCE)


def sum(data, axis=None, keepdims=False):  # noqa: A001 - TOPI's name
    """The sum over `axis`; of bools, whether any is true."""
    return _reduce(data, axis, keepdims, _any if data.dtype == "bool" else _sl.sum)


def max(data, axis=None, keepdims=False):  # noqa: A001
    return _reduce(data, axis, keepdims, _sl.max)


def min(data, axis=None, keepdims=False):  # noqa: A001
    return _reduce(data, axis, keepdims, _sl.min)


def prod(data, axis=None, keepdims=False):
    return _reduce(data, axis, keepdims, _sl.prod)


_all = _sl.comm_reducer(lambda x, y: _sl.all(x, y), lambda t: _sl.const(True, "bool"), "all")
_any = _sl.comm_reducer(lambda x, y: _sl.any(x, y), lambda t: _sl.const(False, "bool"), "any")


def all(data, axis=None, keepdims=False):  # noqa: A001
    return _reduce(data, axis, keepdims, _all)


def any(data, axis=None, keepdims=False):  # noqa: A001
    return _reduce(data, axis, keepdims, _any)


def _index_reducer(better, select_last_index: bool, worst, name: str):
    """The (index, value) reducer that keeps the better value and, among equal values, the
    first index (or the last)."""

    def combine(x, y):
        earlier = x[0] > y[0] if select_last_index else x[0] < y[0]
        take_x = _sl.any(better(x[1], y[1]), _sl.all(x[1] == y[1], earlier))
        return (
            _sl.if_then_else(take_x, x[0], y[0]),
            _sl.if_then_else(better(x[1], y[1]), x[1], y[1]),
        )

    return _sl.comm_reducer(combine, lambda t0, t1: (_sl.const(-1, t0), worst(t1)), name)


def _reduce_index(data, axis, keepdims: bool, reducer):
    axes = real_axes(data, axis)
    reduce_axes = [_sl.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]

    def value(*index):
        flat = reduce_axes[0].var
        for d, k in zip(axes[1:], reduce_axes[1:]):
            flat = flat * data.shape[d] + k.var
        source = data[source_index(data, axes, reduce_axes, index, keepdims)]
        return reducer((flat, source), axis=reduce_axes)

    shape = _reduced_shape(data, axes, keepdims)
    index, _ = _sl.compute(shape, value, name=f"{data.name}_red_temp", tag=COMM_REDUCE_IDX)
    return _sl.compute(shape, lambda *i: index[i], name=f"{data.name}_red", tag=COMM_REDUCE_IDX)


def argmax(data, axis=None, keepdims=False, select_last_index=False):
    """The flat index (over the reduced axes) of the largest element along `axis`."""
    reducer = _index_reducer(lambda a, b: a > b, select_last_index, _sl.min_value, "argmax")
    return _reduce_index(data, axis, keepdims, reducer)


def argmin(data, axis=None, keepdims=False, select_last_index=False):
    """The flat index (over the reduced axes) of the smallest element along `axis`."""
    reducer = _index_reducer(lambda a, b: a < b, select_last_index, _sl.max_value, "argmin")
    return _reduce_index(data, axis, keepdims, reducer)
