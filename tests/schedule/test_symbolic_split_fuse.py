"""Splits and fuses that isl cannot state: split(nparts=) of a symbolic extent (the inner loop
runs ceil(n / nparts) times) and fuse below a symbolic extent (the fused index multiplies by
it). The code generator makes those loops itself: it strip-mines the parent's loop, or fuses
the root loops' nest, each index recovered by division and modulo. Checked against numpy with
NaN-poisoned outputs for sizes of 1 and around the part count, and each use that would pull
the loops apart is refused."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import FactorError

RNG = np.random.default_rng(13)


def _double():
    m = sl.var("m")
    a = sl.placeholder((m,), name="A")
    return a, sl.compute((m,), lambda i: a[i] * 2 + 1, name="B")


def _check(kernel, sizes=(1, 3, 31, 32, 33, 100), simulate=False):
    for n in sizes:
        x = RNG.uniform(-1, 1, n).astype("float32")
        out = np.full(n, np.nan, "float32")
        (kernel.simulate if simulate else kernel)(x, out)
        np.testing.assert_array_equal(out, x * 2 + 1)


def test_the_parent_loop_is_strip_mined():
    a, b = _double()
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], nparts=32)
    text = str(sl.lower(s, [a, b]))
    assert "for i.outer in range(0, 32):" in text
    assert "for i.inner in range(0, (m + 31) // 32):" in text
    assert "let i = i.outer * ((m + 31) // 32) + i.inner" in text and "if i < m:" in text
    _check(sl.build(s, [a, b]))


def test_the_outer_loop_in_parallel_and_on_gpu_blocks():
    a, b = _double()
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], nparts=4)
    s[b].parallel(outer)
    _check(sl.build(s, [a, b]))
    s = sl.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], nparts=4)
    s[b].bind(outer, sl.thread_axis("blockIdx.x"))
    _check(sl.build(s, [a, b], target="cuda"), sizes=(1, 5, 13), simulate=True)


def test_a_producer_computed_inside_the_parts():
    m = sl.var("m")
    a = sl.placeholder((m, 8), name="A")
    p = sl.compute((m, 8), lambda i, j: a[i, j] * 2, name="P")
    c = sl.compute((m, 8), lambda i, j: p[i, j] + 1, name="C")
    s = sl.create_schedule(c)
    outer, inner = s[c].split(c.op.axis[0], nparts=3)
    s[p].compute_at(s[c], c.op.axis[1])
    kernel = sl.build(s, [a, c])
    for n in (1, 7, 20):
        x = RNG.uniform(-1, 1, (n, 8)).astype("float32")
        out = np.full((n, 8), np.nan, "float32")
        kernel(x, out)
        np.testing.assert_array_equal(out, x * 2 + 1)


@pytest.mark.parametrize(
    "use, match",
    [
        ("split", "cannot be split or fused further"),
        ("vectorize", "the inner loop 'i.inner' cannot be bound or annotated"),
        ("reorder", "nothing can be placed between them"),
        ("compute_at", "'P' cannot be computed at one of them"),
    ],
)
def test_uses_that_pull_the_loops_apart_are_refused(use, match):
    m = sl.var("m")
    a = sl.placeholder((m, 8), name="A")
    p = sl.compute((m, 8), lambda i, j: a[i, j] * 2, name="P")
    c = sl.compute((m, 8), lambda i, j: p[i, j] + 1, name="C")
    s = sl.create_schedule(c)
    i, j = c.op.axis
    outer, inner = s[c].split(i, nparts=4)
    if use == "split":
        s[c].split(inner, factor=2)
    elif use == "vectorize":
        s[c].vectorize(inner)
    elif use == "reorder":
        s[c].reorder(outer, j, inner)
    else:
        s[p].compute_at(s[c], inner)
    with pytest.raises(FactorError, match=match):
        sl.lower(s, [a, c])


def _grid():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    return a, sl.compute((m, n), lambda i, j: a[i, j] * 2 + 1, name="B")


def _check_grid(kernel, shapes=((1, 1), (1, 9), (7, 1), (3, 5), (13, 17))):
    for shape in shapes:
        x = RNG.uniform(-1, 1, shape).astype("float32")
        out = np.full(shape, np.nan, "float32")
        kernel(x, out)
        np.testing.assert_array_equal(out, x * 2 + 1)


def test_a_fuse_below_a_symbolic_extent():
    a, b = _grid()
    s = sl.create_schedule(b)
    s[b].fuse(*b.op.axis)
    text = str(sl.lower(s, [a, b]))
    assert "for i.j.fused in range(0, m * n):" in text
    assert "let i = i.j.fused // n" in text and "let j = i.j.fused % n" in text
    _check_grid(sl.build(s, [a, b]))


def test_the_fused_loop_split_by_a_factor_in_parallel():
    a, b = _grid()
    s = sl.create_schedule(b)
    outer, inner = s[b].split(s[b].fuse(*b.op.axis), factor=8)
    s[b].parallel(outer)
    text = str(sl.lower(s, [a, b]))
    assert "range(0, (m * n + 7) // 8):  # parallel" in text and "if i.j.fused < m * n:" in text
    _check_grid(sl.build(s, [a, b]))


def test_the_inner_loops_of_a_reduction_fused():
    m, n, l = sl.var("m"), sl.var("n"), sl.var("l")
    c = sl.placeholder((m, n, l), name="C")
    k = sl.reduce_axis((0, l), name="k")
    e = sl.compute((m, n), lambda i, j: sl.sum(c[i, j, k], axis=k), name="E")
    s = sl.create_schedule(e)
    s[e].parallel(s[e].fuse(*e.op.axis))
    kernel = sl.build(s, [c, e])
    x = RNG.uniform(-1, 1, (3, 4, 5)).astype("float32")
    out = np.full((3, 4), np.nan, "float32")
    kernel(x, out)
    np.testing.assert_allclose(out, x.sum(axis=2), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, None), (None, 1, None), (None, None, 1)])
def test_a_fused_axis_of_extent_1_keeps_the_loop_parallel(shape):
    """isl makes no loop for an axis of one value: the fuse is made of the loops it makes."""
    sizes = [sl.var(f"s{k}") if d is None else d for k, d in enumerate(shape)]
    a = sl.placeholder(tuple(sizes), name="A")
    b = sl.compute(tuple(sizes), lambda *i: a[i] + 1, name="B")
    s = sl.create_schedule(b)
    s[b].parallel(s[b].fuse(*b.op.axis))
    assert "# parallel" in str(sl.lower(s, [a, b]))
    concrete = tuple(5 if d is None else d for d in shape)
    x = RNG.uniform(-1, 1, concrete).astype("float32")
    out = np.full(concrete, np.nan, "float32")
    sl.build(s, [a, b])(x, out)
    np.testing.assert_array_equal(out, x + 1)


@pytest.mark.parametrize(
    "use, match",
    [
        ("bind", "'i.j.fused.outer' can be serial or parallel, not blockIdx.x"),
        ("vectorize", "'i.j.fused.inner' can be serial or parallel, not vectorized"),
        ("split_first", "must be loops of the stage's own axes"),
        ("compute_at", "'P' cannot be computed at its loops"),
    ],
)
def test_uses_of_a_symbolic_fuse_it_cannot_make_are_refused(use, match):
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    p = sl.compute((m, n), lambda i, j: a[i, j] * 2, name="P")
    b = sl.compute((m, n), lambda i, j: p[i, j] + 1, name="B")
    s = sl.create_schedule(b)
    i, j = b.op.axis
    if use == "split_first":
        io, ii = s[b].split(i, factor=2)
        s[b].fuse(ii, j)
    else:
        outer, inner = s[b].split(s[b].fuse(i, j), factor=8)
        if use == "bind":
            s[b].bind(outer, sl.thread_axis("blockIdx.x"))
        elif use == "vectorize":
            s[b].vectorize(inner)
        else:
            s[p].compute_at(s[b], inner)
    with pytest.raises(FactorError, match=match):
        sl.lower(s, [a, b])
