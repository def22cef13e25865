"""Matmul and transpose under tile / split / reorder / fuse, against the reference."""

from __future__ import annotations

import pytest

import schedlang as sl

from .util import check


def matmul(m, n, k_extent):
    a = sl.placeholder((m, k_extent), name="A")
    b = sl.placeholder((k_extent, n), name="B")
    k = sl.reduce_axis((0, k_extent), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def natural(s, c):
    pass


def tile_8_4(s, c):
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    io, jo, ii, ji = s[c].tile(i, j, 8, 4)
    ko, ki = s[c].split(k, 3)
    s[c].reorder(io, jo, ko, ii, ki, ji)


def reduce_outermost(s, c):
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    s[c].reorder(k, i, j)


def reduce_middle_split(s, c):
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    ko, ki = s[c].split(k, factor=5)
    s[c].reorder(ko, j, ki, i)


def reduce_split_both_outside(s, c):
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    ko, ki = s[c].split(k, factor=4)
    s[c].reorder(ko, ki, i, j)


def tile_unroll_vectorize(s, c):
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    io, jo, ii, ji = s[c].tile(i, j, 3, 5)
    s[c].reorder(io, jo, k, ii, ji)
    s[c].unroll(ii)
    s[c].vectorize(ji)
    s[c].parallel(io)


def split_reduce_nparts(s, c):
    (k,) = c.op.reduce_axis
    s[c].split(k, nparts=2)


def fuse_data_axes(s, c):
    i, j = c.op.axis
    fused = s[c].fuse(i, j)
    fo, fi = s[c].split(fused, factor=7)
    s[c].parallel(fo)


SCHEDULES = [
    natural,
    tile_8_4,
    reduce_outermost,
    reduce_middle_split,
    reduce_split_both_outside,
    tile_unroll_vectorize,
    split_reduce_nparts,
    fuse_data_axes,
]


@pytest.mark.parametrize("shape", [(1, 1, 1), (13, 11, 7), (7, 17, 13)], ids=str)
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
def test_matmul_constant(schedule, shape):
    a, b, c = matmul(*shape)
    s = sl.create_schedule(c)
    schedule(s, c)
    check(s, [a, b], [c])


SYMBOLIC = [natural, tile_8_4, reduce_outermost, reduce_middle_split, reduce_split_both_outside]


@pytest.mark.parametrize("shape", [(1, 1, 1), (13, 11, 7)], ids=str)
@pytest.mark.parametrize("schedule", SYMBOLIC, ids=lambda f: f.__name__)
def test_matmul_symbolic(schedule, shape):
    a, b, c = matmul(sl.var("M"), sl.var("N"), sl.var("K"))
    s = sl.create_schedule(c)
    schedule(s, c)
    check(s, [a, b], [c], dict(zip("MNK", shape)))


def test_matmul_symbolic_fuse_after_constant_split():
    a, b, c = matmul(sl.var("M"), sl.var("N"), sl.var("K"))
    s = sl.create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=4)
    s[c].fuse(jo, ji)
    check(s, [a, b], [c], {"M": 5, "N": 9, "K": 3})


def transpose(m, n):
    a = sl.placeholder((m, n), name="A")
    return a, sl.compute((n, m), lambda i, j: a[j, i], name="T")


@pytest.mark.parametrize("factors", [(4, 4), (3, 5), (8, 1)], ids=str)
@pytest.mark.parametrize("shape", [(13, 7), (1, 17)], ids=str)
def test_transpose_tiled(shape, factors):
    a, t = transpose(*shape)
    s = sl.create_schedule(t)
    i, j = t.op.axis
    io, jo, ii, ji = s[t].tile(i, j, *factors)
    s[t].reorder(jo, io, ji, ii)
    check(s, [a], [t])


def test_transpose_tiled_symbolic():
    a, t = transpose(sl.var("m"), sl.var("n"))
    s = sl.create_schedule(t)
    i, j = t.op.axis
    s[t].tile(i, j, 4, 3)
    check(s, [a], [t], {"m": 13, "n": 7})


@pytest.mark.parametrize("symbolic", [False, True])
def test_fuse_after_tile_reorder(symbolic):
    """Fusing loops that a reorder made adjacent (they were apart in split order)."""
    a, b, c = matmul(sl.var("M") if symbolic else 13, 11, 7)
    s = sl.create_schedule(c)
    i, j = c.op.axis
    io, jo, ii, ji = s[c].tile(i, j, 4, 3)
    s[c].fuse(ii, ji)
    check(s, [a, b], [c], {"M": 13})
