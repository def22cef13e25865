"""Row reductions, softmax as four computes, and reduce axes that start above zero."""

from __future__ import annotations

import pytest

import schedlang as sl

from .util import check


@pytest.mark.parametrize("reducer", [sl.sum, sl.max], ids=["sum", "max"])
@pytest.mark.parametrize("factor", [None, 1, 3, 5])
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (13, 17)], ids=str)
def test_row_reduction(reducer, factor, shape):
    a = sl.placeholder(shape, name="A")
    k = sl.reduce_axis((0, shape[1]), name="k")
    r = sl.compute((shape[0],), lambda i: reducer(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    if factor is not None:
        ko, ki = s[r].split(k, factor=factor)
        io, ii = s[r].split(r.op.axis[0], factor=2)
        s[r].reorder(io, ko, ii, ki)
    check(s, [a], [r])


def test_row_max_symbolic():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    r = sl.compute((m,), lambda i: sl.max(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    s[r].split(k, factor=4)
    check(s, [a], [r], {"m": 7, "n": 13})


def softmax(m, n):
    a = sl.placeholder((m, n), name="A")
    k1 = sl.reduce_axis((0, n), name="k1")
    k2 = sl.reduce_axis((0, n), name="k2")
    mx = sl.compute((m,), lambda i: sl.max(a[i, k1], axis=k1), name="MX")
    e = sl.compute((m, n), lambda i, j: sl.exp(a[i, j] - mx[i]), name="E")
    total = sl.compute((m,), lambda i: sl.sum(e[i, k2], axis=k2), name="S")
    out = sl.compute((m, n), lambda i, j: e[i, j] / total[i], name="Y")
    return a, mx, e, total, out


def sm_root(s, mx, e, total, out):
    pass


def sm_reductions_at_row(s, mx, e, total, out):
    i = out.op.axis[0]
    s[total].compute_at(s[out], i)
    s[mx].compute_at(s[e], e.op.axis[0])


def sm_inline_exp(s, mx, e, total, out):
    s[e].compute_inline()
    s[total].compute_at(s[out], out.op.axis[0])


def sm_split_rows(s, mx, e, total, out):
    io, ii = s[out].split(out.op.axis[0], factor=3)
    jo, ji = s[out].split(out.op.axis[1], factor=4)
    s[out].reorder(io, ii, jo, ji)
    s[out].vectorize(ji)
    s[total].compute_at(s[out], ii)
    s[out].parallel(io)


def sm_max_at_exp_column(s, mx, e, total, out):
    s[mx].compute_at(s[e], e.op.axis[1])
    s[total].split(total.op.reduce_axis[0], factor=5)


SOFTMAX = [sm_root, sm_reductions_at_row, sm_inline_exp, sm_split_rows, sm_max_at_exp_column]


@pytest.mark.parametrize("shape", [(1, 1), (7, 13)], ids=str)
@pytest.mark.parametrize("schedule", SOFTMAX, ids=lambda f: f.__name__)
def test_softmax(schedule, shape):
    a, mx, e, total, out = softmax(*shape)
    s = sl.create_schedule(out)
    schedule(s, mx, e, total, out)
    check(s, [a], [out])


@pytest.mark.parametrize("schedule", SOFTMAX, ids=lambda f: f.__name__)
def test_softmax_symbolic(schedule):
    a, mx, e, total, out = softmax(sl.var("m"), sl.var("n"))
    s = sl.create_schedule(out)
    schedule(s, mx, e, total, out)
    check(s, [a], [out], {"m": 5, "n": 11})


@pytest.mark.parametrize("factor", [None, 2, 4])
@pytest.mark.parametrize("low", [1, 3])
def test_reduce_axis_with_lower_bound(low, factor):
    a = sl.placeholder((7, 13), name="A")
    k = sl.reduce_axis((low, 13), name="k")
    r = sl.compute((7,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    if factor is not None:
        ko, ki = s[r].split(k, factor=factor)
        s[r].reorder(ko, r.op.axis[0], ki)
    check(s, [a], [r])


def test_reduce_axis_with_symbolic_lower_bound():
    n, lo = sl.var("n"), sl.var("lo")
    a = sl.placeholder((7, n), name="A")
    k = sl.reduce_axis((lo, n), name="k")
    r = sl.compute((7,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    s[r].split(k, factor=3)
    check(s, [a], [r], {"n": 13}, unseen={lo: 4})


def test_an_affine_where_bounds_the_reduce_loop():
    """A triangular where= is the reduction's domain, so isl bounds the loop by it (a prefix
    sum runs n(n+1)/2 updates, not n^2 guarded ones), also after a split of the reduce axis."""
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    k = sl.reduce_axis((0, n), name="k")
    p = sl.compute((n,), lambda i: sl.sum(a[k], axis=k, where=k <= i), name="P")
    s = sl.create_schedule(p)
    assert "for k in range(0, i + 1):" in str(sl.lower(s, [a, p]))
    check(s, [a], [p], {"n": 23})
    ko, ki = s[p].split(k, factor=4)
    assert "for k.outer in range(0, i // 4 + 1):" in str(sl.lower(s, [a, p]))
    check(s, [a], [p], {"n": 23})
