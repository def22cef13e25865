"""Two-stage blur and a padded conv2d-like stencil under compute_root / inline / compute_at."""

from __future__ import annotations

import pytest

import schedlang as sl

from .util import check


def blur(h, w):
    """blur_x over three columns, then blur_y over three rows (the output shrinks by 2)."""
    a = sl.placeholder((h, w), name="A")
    bx = sl.compute((h, w - 2), lambda y, x: a[y, x] + a[y, x + 1] + a[y, x + 2], name="BX")
    by = sl.compute((h - 2, w - 2), lambda y, x: bx[y, x] + bx[y + 1, x] + bx[y + 2, x], name="BY")
    return a, bx, by


def at_root(s, bx, by):
    s[bx].compute_root()


def inline(s, bx, by):
    s[bx].compute_inline()


def at_outer_row(s, bx, by):
    y, x = by.op.axis
    s[bx].compute_at(s[by], y)


def at_inner_column(s, bx, by):
    y, x = by.op.axis
    s[bx].compute_at(s[by], x)


def at_tile(s, bx, by):
    y, x = by.op.axis
    yo, xo, yi, xi = s[by].tile(y, x, 4, 3)
    s[bx].compute_at(s[by], xo)
    s[by].vectorize(xi)


def at_tile_outer_row(s, bx, by):
    y, x = by.op.axis
    yo, xo, yi, xi = s[by].tile(y, x, 5, 4)
    s[bx].compute_at(s[by], yo)
    bxo, bxi = s[bx].split(bx.op.axis[1], factor=2)
    s[bx].unroll(bxi)


def at_split_inner(s, bx, by):
    y, x = by.op.axis
    yo, yi = s[by].split(y, factor=3)
    s[bx].compute_at(s[by], yi)


def inline_then_tile(s, bx, by):
    s[bx].compute_inline()
    y, x = by.op.axis
    s[by].tile(y, x, 3, 3)


BLUR_SCHEDULES = [
    at_root,
    inline,
    at_outer_row,
    at_inner_column,
    at_tile,
    at_tile_outer_row,
    at_split_inner,
    inline_then_tile,
]


@pytest.mark.parametrize("shape", [(3, 3), (13, 7), (17, 11)], ids=str)
@pytest.mark.parametrize("schedule", BLUR_SCHEDULES, ids=lambda f: f.__name__)
def test_blur_constant(schedule, shape):
    a, bx, by = blur(*shape)
    s = sl.create_schedule(by)
    schedule(s, bx, by)
    check(s, [a], [by])


@pytest.mark.parametrize("shape", [(3, 3), (13, 7)], ids=str)
@pytest.mark.parametrize("schedule", BLUR_SCHEDULES, ids=lambda f: f.__name__)
def test_blur_symbolic(schedule, shape):
    a, bx, by = blur(sl.var("h"), sl.var("w"))
    s = sl.create_schedule(by)
    schedule(s, bx, by)
    check(s, [a], [by], {"h": shape[0], "w": shape[1]})


def conv(n, r):
    """A 3x3 stencil over a zero-padded copy of A (same output size as A)."""
    a = sl.placeholder((n, n), name="A")
    w = sl.placeholder((3, 3), name="W")
    pad = sl.compute(
        (n + 2, n + 2),
        lambda y, x: sl.if_then_else(
            sl.all(y >= 1, y < n + 1, x >= 1, x < n + 1), a[y - 1, x - 1], 0.0
        ),
        name="P",
    )
    ry = sl.reduce_axis((0, r), name="ry")
    rx = sl.reduce_axis((0, r), name="rx")
    out = sl.compute(
        (n, n),
        lambda y, x: sl.sum(pad[y + ry, x + rx] * w[ry, rx], axis=[ry, rx]),
        name="O",
    )
    return a, w, pad, out


def conv_root(s, pad, out):
    pass


def conv_inline(s, pad, out):
    s[pad].compute_inline()


def conv_at_row(s, pad, out):
    s[pad].compute_at(s[out], out.op.axis[0])


def conv_at_column(s, pad, out):
    s[pad].compute_at(s[out], out.op.axis[1])


def conv_at_tile(s, pad, out):
    y, x = out.op.axis
    yo, xo, yi, xi = s[out].tile(y, x, 4, 5)
    s[pad].compute_at(s[out], xo)


def conv_at_reduce(s, pad, out):
    ry, rx = out.op.reduce_axis
    s[pad].compute_at(s[out], ry)


CONV_SCHEDULES = [conv_root, conv_inline, conv_at_row, conv_at_column, conv_at_tile, conv_at_reduce]


@pytest.mark.parametrize("size", [1, 7, 13])
@pytest.mark.parametrize("schedule", CONV_SCHEDULES, ids=lambda f: f.__name__)
def test_padded_conv(schedule, size):
    a, w, pad, out = conv(size, 3)
    s = sl.create_schedule(out)
    schedule(s, pad, out)
    check(s, [a, w], [out])


@pytest.mark.parametrize("schedule", CONV_SCHEDULES, ids=lambda f: f.__name__)
def test_padded_conv_symbolic(schedule):
    a, w, pad, out = conv(sl.var("n"), 3)
    s = sl.create_schedule(out)
    schedule(s, pad, out)
    check(s, [a, w], [out], {"n": 7})
