"""TOPI's shape and data-movement operators (``topi.transpose``, ``reshape``, ``squeeze``,
``expand_dims``, ``concatenate``, ``stack``, ``split``, ``strided_slice``, ``take``, ``gather``,
``where``, ``matmul``), as TOPI's C++ library defines them: a compute ``T_<name>`` tagged
"injective" (``expand_dims`` and ``where`` "broadcast"), so TOPI's injective schedules apply.

`take` and `gather` read the data at indices held in a tensor; `take` clips them into range
(its default mode), as TOPI does."""

from __future__ import annotations

import math

import schedlang as _sl

from ...errors import AlgorithmError
from ..tir import truncmod
from .tag import BROADCAST, INJECTIVE, MATMUL
from .utils import const_value, get_const_tuple, normalize_axis, simplified


def expand_dims(a, axis, num_newaxis=1):
    """`a` with `num_newaxis` dimensions of size 1 inserted before dimension `axis`."""
    if not -a.ndim - 1 <= axis <= a.ndim:
        raise AlgorithmError(f"expand_dims: axis {axis} is out of range for {a.ndim} dimensions")
    axis = axis + a.ndim + 1 if axis < 0 else axis
    shape = a.shape[:axis] + (1,) * num_newaxis + a.shape[axis:]

    def value(*i):
        return a[i[:axis] + i[axis + num_newaxis :]]

    return _sl.compute(shape, value, name="T_expand_dims", tag=BROADCAST)


def transpose(a, axes=None):
    """`a` with its dimensions permuted: output dimension d is input dimension ``axes[d]``
    (reversed when `axes` is None or empty)."""
    axes = list(range(a.ndim))[::-1] if not axes else [int(x) for x in axes]
    axes = [normalize_axis(x, a.ndim, "transpose") for x in axes]
    if sorted(axes) != list(range(a.ndim)):
        raise AlgorithmError(f"transpose: axes {axes} are not a permutation of {a.ndim} dimensions")
    shape = tuple(a.shape[x] for x in axes)

    def value(*i):
        index = [None] * a.ndim
        for d, x in enumerate(axes):
            index[x] = i[d]
        return a[tuple(index)]

    return _sl.compute(shape, value, name="T_transpose", tag=INJECTIVE)


def _ravel(index, shape):
    flat = 0
    for i, n in zip(index, shape):
        flat = flat * n + i
    return flat


def _unravel(flat, shape):
    index = []
    for n in reversed(shape):
        index.append(flat % n)
        flat = flat // n
    return tuple(reversed(index))


def reshape(a, newshape):
    """`a`'s elements in row-major order, in the shape `newshape` of as many elements."""
    newshape = tuple(newshape)
    old = math.prod(get_const_tuple(a.shape))
    new = math.prod(get_const_tuple(newshape))
    if old != new:
        raise AlgorithmError(
            f"reshape: '{a.name}' has {old} elements, the shape {newshape} has {new}"
        )
    return _sl.compute(
        newshape,
        lambda *i: a[_unravel(_ravel(i, newshape), a.shape)],
        name="T_reshape",
        tag=INJECTIVE,
    )


def squeeze(a, axis=None):
    """`a` without its dimensions of size 1 (those of `axis`, or all)."""
    if axis is None:
        axes = [d for d, n in enumerate(a.shape) if const_value(n) == 1]
    else:
        axes = [axis] if isinstance(axis, int) else list(axis)
        axes = sorted({normalize_axis(int(x), a.ndim, "squeeze") for x in axes})
        for d in axes:
            if const_value(a.shape[d]) != 1:
                raise AlgorithmError(f"squeeze: dimension {d} of '{a.name}' is not of size 1")
    shape = tuple(n for d, n in enumerate(a.shape) if d not in axes)

    def value(*i):
        kept = iter(i)
        return a[tuple(0 if d in axes else next(kept) for d in range(a.ndim))]

    return _sl.compute(shape, value, name="T_squeeze", tag=INJECTIVE)


def concatenate(a_tuple, axis=0):
    """The tensors of `a_tuple` joined along `axis` (their other dimensions equal)."""
    tensors = list(a_tuple)
    axis = normalize_axis(axis, tensors[0].ndim, "concatenate")
    sizes = [t.shape[axis] for t in tensors]
    total = sizes[0]
    for size in sizes[1:]:
        total = total + size
    shape = simplified(tensors[0].shape[:axis] + (total,) + tensors[0].shape[axis + 1 :])

    def value(*i):
        result = tensors[0][i]
        offset = i[axis]
        for size, t in zip(sizes, tensors[1:]):
            offset = offset - size
            result = _sl.if_then_else(offset >= 0, t[i[:axis] + (offset,) + i[axis + 1 :]], result)
        return result

    return _sl.compute(shape, value, name="T_concat", tag=INJECTIVE)


def stack(a, axis):
    """The tensors of `a` (of one shape) stacked along a new dimension `axis`."""
    tensors = list(a)
    if not -tensors[0].ndim - 1 <= axis <= tensors[0].ndim:
        raise AlgorithmError(f"stack: axis {axis} is out of range")
    axis = axis + tensors[0].ndim + 1 if axis < 0 else axis
    shape = tensors[0].shape[:axis] + (len(tensors),) + tensors[0].shape[axis:]

    def value(*i):
        rest = i[:axis] + i[axis + 1 :]
        result = tensors[0][rest]
        for k, t in enumerate(tensors[1:], start=1):
            result = _sl.if_then_else(i[axis] == k, t[rest], result)
        return result

    return _sl.compute(shape, value, name="T_stack", tag=INJECTIVE)


def split(ary, indices_or_sections, axis=0):
    """`ary` cut along `axis` into `indices_or_sections` equal parts (an int, which must divide
    the dimension), or before each of the given indices."""
    axis = normalize_axis(axis, ary.ndim, "split")
    extent = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        size = const_value(extent)
        if sections <= 0 or (size is not None and size % sections):
            raise AlgorithmError(
                f"split: {sections} sections do not divide dimension {axis} of size {extent}"
            )
        part = extent // sections
        begins = [0] + [part * k for k in range(1, sections)]
        name = "T_split_sections"
    else:
        begins = [0] + list(indices_or_sections)
        name = "T_split"
    ends = begins[1:] + [extent]
    return [_slice_along(ary, axis, b, e - b, name) for b, e in zip(begins, ends)]


def _slice_along(ary, axis, begin, size, name):
    shape = simplified(ary.shape[:axis] + (size,) + ary.shape[axis + 1 :])
    return _sl.compute(
        shape, lambda *i: ary[i[:axis] + (i[axis] + begin,) + i[axis + 1 :]], name, INJECTIVE
    )


def strided_slice(a, begin, end, strides=None, axes=None, slice_mode="end"):
    """numpy's ``a[begin:end:stride]`` on each dimension of `axes` (all when None); with
    ``slice_mode="size"``, `end` holds sizes (-1: to the end) and the strides are 1."""
    shape = get_const_tuple(a.shape)
    axes = list(range(len(begin))) if axes is None else [int(x) for x in axes]
    strides = [1] * len(axes) if strides is None else list(strides)
    strides = strides + [1] * (len(axes) - len(strides))
    starts, steps, extents = [0] * a.ndim, [1] * a.ndim, list(shape)
    for k, d in enumerate(axes):
        d = normalize_axis(d, a.ndim, "strided_slice")
        stop = end[k] if k < len(end) else None
        if slice_mode == "size":
            stop = None if stop is None or stop < 0 else begin[k] + stop
            step = 1
        else:
            step = int(strides[k])
        start, stop, step = slice(int(begin[k]), stop, step).indices(shape[d])
        starts[d], steps[d] = start, step
        extents[d] = len(range(start, stop, step))
    return _sl.compute(
        tuple(extents),
        lambda *i: a[tuple(s + t * x for s, t, x in zip(starts, steps, i))],
        name="T_strided_slice_with_axes" if axes != list(range(len(begin))) else "T_strided_slice",
        tag=INJECTIVE,
    )


def _clip(index, extent):
    return _sl.minimum(_sl.maximum(index, 0), extent - 1)


def _wrap(index, extent):
    return truncmod(truncmod(index, extent) + extent, extent)


_MODES = {"clip": _clip, "wrap": _wrap, "fast": lambda index, extent: index}


def take(a, indices, axis=None, batch_dims=0, mode="clip"):
    """The elements of `a` at `indices` along `axis` (of the flattened `a` when None), brought
    into range as `mode` says: "clip" (nearest end), "wrap" (modulo) or "fast" (as given)."""
    if mode not in _MODES:
        raise AlgorithmError(f"take: mode '{mode}' is not one of clip, wrap, fast")
    fix = _MODES[mode]
    if axis is None:
        size = math.prod(get_const_tuple(a.shape))
        return _sl.compute(
            indices.shape,
            lambda *i: a[_unravel(fix(indices[i], size), a.shape)],
            name="T_take",
            tag=INJECTIVE,
        )
    axis = normalize_axis(int(axis), a.ndim, "take")
    batch = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    if not 0 <= batch <= axis:
        raise AlgorithmError(f"take: batch_dims {batch_dims} must lie in [0, axis={axis}]")
    inner = indices.ndim - batch
    shape = a.shape[:axis] + indices.shape[batch:] + a.shape[axis + 1 :]

    def value(*i):
        position = i[:batch] + i[axis : axis + inner]
        index = fix(indices[position], a.shape[axis])
        return a[i[:axis] + (index,) + i[axis + inner :]]

    return _sl.compute(shape, value, name="T_take", tag=INJECTIVE)


def gather(data, axis, indices):
    """``out[i..] = data[i.. with indices[i..] at axis]``: `indices` has `data`'s rank."""
    if data.ndim != indices.ndim:
        raise AlgorithmError(
            f"gather: data has {data.ndim} dimensions, indices {indices.ndim}; they must agree"
        )
    axis = normalize_axis(axis, data.ndim, "gather")
    return _sl.compute(
        indices.shape,
        lambda *i: data[i[:axis] + (indices[i],) + i[axis + 1 :]],
        name="T_gather",
        tag=INJECTIVE,
    )


def where(condition, x, y):
    """`x` where `condition` holds, else `y`, all three broadcast to one shape."""
    tensors = [t for t in (condition, x, y) if isinstance(t, _sl.Tensor)]
    rank = max(t.ndim for t in tensors)
    shape = []
    for d in range(rank):
        sizes = [t.shape[d - rank + t.ndim] for t in tensors if d - rank + t.ndim >= 0]
        larger = [n for n in sizes if const_value(n) != 1]
        shape.append(larger[0] if larger else 1)

    def read(t, i):
        if not isinstance(t, _sl.Tensor):
            return t
        skip = rank - t.ndim
        return t[tuple(0 if const_value(n) == 1 else i[skip + d] for d, n in enumerate(t.shape))]

    def value(*i):
        return _sl.if_then_else(read(condition, i) != 0, read(x, i), read(y, i))

    return _sl.compute(tuple(shape), value, name="T_where", tag=BROADCAST)


def matmul(a, b, transp_a=False, transp_b=False):
    """The matrix product of 2-D `a` and `b` (each transposed first when asked): TOPI's
    ``topi.matmul``, ``T_matmul`` tagged "matmul"."""
    m, k_size = (a.shape[1], a.shape[0]) if transp_a else a.shape
    n = b.shape[0] if transp_b else b.shape[1]
    k = _sl.reduce_axis((0, k_size), name="k")

    def value(i, j):
        left = a[k, i] if transp_a else a[i, k]
        right = b[j, k] if transp_b else b[k, j]
        return _sl.sum(left * right, axis=k)

    return _sl.compute((m, n), value, name="T_matmul", tag=MATMUL)
