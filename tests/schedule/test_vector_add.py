"""Vector add under loop primitives, checked against the reference through the interpreter."""

from __future__ import annotations

import pytest

import schedlang as sl

from .util import check


def vadd(n):
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] + b[i], name="C")
    return a, b, c


def no_schedule(s, c):
    pass


def split_factor(s, c):
    s[c].split(c.op.axis[0], factor=4)


def split_factor_vectorize(s, c):
    _, xi = s[c].split(c.op.axis[0], factor=3)
    s[c].vectorize(xi)


def split_unroll_parallel(s, c):
    xo, xi = s[c].split(c.op.axis[0], factor=5)
    s[c].parallel(xo)
    s[c].unroll(xi)


def split_twice(s, c):
    xo, xi = s[c].split(c.op.axis[0], factor=6)
    xio, xii = s[c].split(xi, factor=4)
    s[c].vectorize(xii)


def split_fuse(s, c):
    xo, xi = s[c].split(c.op.axis[0], factor=4)
    s[c].fuse(xo, xi)


def split_reorder(s, c):
    xo, xi = s[c].split(c.op.axis[0], factor=4)
    s[c].reorder(xi, xo)


def split_factor_one(s, c):
    xo, xi = s[c].split(c.op.axis[0], factor=1)
    s[c].unroll(xi)


def split_factor_larger(s, c):
    s[c].split(c.op.axis[0], factor=19)


SCHEDULES = [
    no_schedule,
    split_factor,
    split_factor_vectorize,
    split_unroll_parallel,
    split_twice,
    split_fuse,
    split_reorder,
    split_factor_one,
    split_factor_larger,
]


@pytest.mark.parametrize("size", [1, 7, 13, 17])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
def test_constant_size(schedule, size):
    a, b, c = vadd(size)
    s = sl.create_schedule(c)
    schedule(s, c)
    check(s, [a, b], [c])


@pytest.mark.parametrize("size", [1, 7, 13])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: f.__name__)
def test_symbolic_size(schedule, size):
    a, b, c = vadd(sl.var("n"))
    s = sl.create_schedule(c)
    schedule(s, c)
    check(s, [a, b], [c], {"n": size})


@pytest.mark.parametrize("size", [1, 7, 13, 17])
@pytest.mark.parametrize("nparts", [1, 3, 4, 20])
def test_split_nparts(size, nparts):
    a, b, c = vadd(size)
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], nparts=nparts)
    s[c].vectorize(xi)
    check(s, [a, b], [c])


@pytest.mark.parametrize("size", [7, 13])
def test_split_nparts_then_fuse(size):
    a, b, c = vadd(size)
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], nparts=3)
    fused = s[c].fuse(xo, xi)
    s[c].parallel(fused)
    check(s, [a, b], [c])
