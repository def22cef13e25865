"""Printed loop nests of the TE "schedule primitives" tutorial, compared with tests/golden/.

Run with ``SCHEDLANG_UPDATE_GOLDEN=1`` to rewrite the files after an intended change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import schedlang as sl

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("SCHEDLANG_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        return
    if not path.exists():
        pytest.fail(f"{path} is missing; run with SCHEDLANG_UPDATE_GOLDEN=1 to create it")
    assert text + "\n" == path.read_text()


def elementwise():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    b = sl.compute((m, n), lambda i, j: a[i, j] * 2.0, name="B")
    return a, b


def split_by_factor():
    a, b = elementwise()
    s = sl.create_schedule(b)
    s[b].split(b.op.axis[0], factor=32)
    return s, [a, b]


def split_by_nparts():
    a = sl.placeholder((1024,), name="A")
    b = sl.compute((1024,), lambda i: a[i] * 2.0, name="B")
    s = sl.create_schedule(b)
    s[b].split(b.op.axis[0], nparts=32)
    return s, [a, b]


def tile():
    a, b = elementwise()
    s = sl.create_schedule(b)
    s[b].tile(b.op.axis[0], b.op.axis[1], x_factor=10, y_factor=5)
    return s, [a, b]


def fuse():
    a, b = elementwise()
    s = sl.create_schedule(b)
    xo, yo, xi, yi = s[b].tile(b.op.axis[0], b.op.axis[1], x_factor=10, y_factor=5)
    s[b].fuse(xi, yi)
    return s, [a, b]


def reorder():
    a, b = elementwise()
    s = sl.create_schedule(b)
    xo, xi = s[b].split(b.op.axis[0], factor=32)
    yo, yi = s[b].split(b.op.axis[1], factor=32)
    s[b].reorder(xi, yo, xo, yi)
    return s, [a, b]


def two_stage():
    m = sl.var("m")
    n = sl.var("n")
    a = sl.placeholder((m, n), name="A")
    b = sl.compute((m, n), lambda i, j: a[i, j] + 1.0, name="B")
    c = sl.compute((m, n), lambda i, j: b[i, j] * 2.0, name="C")
    return a, b, c


def compute_at():
    a, b, c = two_stage()
    s = sl.create_schedule(c)
    s[b].compute_at(s[c], c.op.axis[0])
    return s, [a, c]


def compute_inline():
    a, b, c = two_stage()
    s = sl.create_schedule(c)
    s[b].compute_inline()
    return s, [a, c]


def compute_root():
    a, b, c = two_stage()
    s = sl.create_schedule(c)
    s[b].compute_at(s[c], c.op.axis[0])
    s[b].compute_root()
    return s, [a, c]


def bind():
    """TE's tutorial binds a split vector add to blocks and threads."""
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    s = sl.create_schedule(b)
    bx, tx = s[b].split(b.op.axis[0], factor=64)
    s[b].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].bind(tx, sl.thread_axis("threadIdx.x"))
    return s, [a, b]


def matmul(m, n, kk):
    a = sl.placeholder((m, kk), name="A")
    b = sl.placeholder((kk, n), name="B")
    k = sl.reduce_axis((0, kk), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def cache_read():
    a, b, c = matmul(sl.var("m"), 64, 64)
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "shared", [c])
    i, j = c.op.axis
    by, ty = s[c].split(i, factor=8)
    s[c].bind(by, sl.thread_axis("blockIdx.x"))
    s[c].bind(ty, sl.thread_axis("threadIdx.x"))
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=16)
    s[c].reorder(by, ko, ty, j, ki)
    s[aa].compute_at(s[c], ko)
    s[aa].bind(s[aa].op.axis[0], sl.thread_axis("threadIdx.x"))
    return s, [a, b, c]


def cache_write():
    a, b, c = matmul(64, 64, 64)
    s = sl.create_schedule(c)
    cc = s.cache_write(c, "global")
    xo, yo, xi, yi = s[c].tile(c.op.axis[0], c.op.axis[1], 16, 16)
    s[cc].compute_at(s[c], yo)
    xc, yc = s[cc].op.axis
    ko, ki = s[cc].split(s[cc].op.reduce_axis[0], factor=4)
    s[cc].reorder(ko, xc, ki, yc)
    s[cc].unroll(ki)
    s[cc].vectorize(yc)
    return s, [a, b, c]


def rfactor():
    n = sl.var("n")
    a = sl.placeholder((n, 64), name="A")
    k = sl.reduce_axis((0, 64), name="k")
    b = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b)
    ko, ki = s[b].split(k, factor=16)
    bf = s.rfactor(b, ki)
    s[bf].compute_at(s[b], s[b].op.axis[0])
    s[bf].vectorize(s[bf].op.axis[0])
    return s, [a, b]


def storage_align():
    a, b, c = matmul(64, 64, 64)
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "shared", [c])
    xo, yo, xi, yi = s[c].tile(c.op.axis[0], c.op.axis[1], 16, 16)
    s[aa].compute_at(s[c], yo)
    s[aa].storage_align(s[aa].op.axis[0], 32, 1)
    return s, [a, b, c]


EXAMPLES = [
    split_by_factor,
    split_by_nparts,
    tile,
    fuse,
    reorder,
    compute_at,
    compute_inline,
    compute_root,
    bind,
    cache_read,
    cache_write,
    rfactor,
    storage_align,
]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda f: f.__name__)
def test_golden_loop_nest(example):
    s, args = example()
    assert_golden(example.__name__, str(sl.lower(s, args)))
