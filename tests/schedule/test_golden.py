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


EXAMPLES = [
    split_by_factor,
    split_by_nparts,
    tile,
    fuse,
    reorder,
    compute_at,
    compute_inline,
    compute_root,
]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda f: f.__name__)
def test_golden_loop_nest(example):
    s, args = example()
    assert_golden(example.__name__, str(sl.lower(s, args)))
