"""Four tile loops fused across tails (tiles that do not divide the stage): the code generator
fuses them, each tile index recovered by division and modulo and the tails guarded. isl's own
fused index took minutes to invert at 65 x 65 (its cases multiply with every loop fused)."""

from __future__ import annotations

import time

import pytest

import schedlang as sl
from schedlang.loopir import from_isl
from schedlang.schedule.errors import FactorError
from tests.schedule.util import check


def _fused_tiles(n: int, m: int, tile: int, how: str = "serial"):
    a = sl.placeholder((n, m), name="A")
    b = sl.compute((n, m), lambda i, j: a[i, j] * 2.0 + a[i, 0], name="B")
    s = sl.create_schedule(b)
    xo, yo, xi, yi = s[b].tile(b.op.axis[0], b.op.axis[1], tile, tile)
    fused = s[b].fuse(xo, yo, xi, yi)
    if how == "parallel":
        s[b].parallel(fused)
    elif how == "split":
        outer, _ = s[b].split(fused, factor=7)
        s[b].parallel(outer)
    return s, a, b


@pytest.mark.parametrize("how", ["serial", "parallel", "split"])
def test_four_loops_fused_across_tails_lower_in_seconds_and_match(how):
    s, a, b = _fused_tiles(65, 65, 8, how)
    start = time.perf_counter()
    check(s, [a], [b])
    assert time.perf_counter() - start < 20  # minutes before


def test_uneven_tiles_of_an_odd_shape_match():
    s, a, b = _fused_tiles(13, 5, 4)
    check(s, [a], [b])


def test_indices_isl_cannot_recover_in_its_operations_are_refused(monkeypatch):
    monkeypatch.setattr(from_isl, "LEAF_OPERATIONS", 20)
    a = sl.placeholder((17, 17), name="A")
    b = sl.compute((17, 17), lambda i, j: a[i, j] * 2.0, name="B")
    s = sl.create_schedule(b)
    _, _, xi, yi = s[b].tile(b.op.axis[0], b.op.axis[1], 4, 4)
    s[b].fuse(xi, yi)
    with pytest.raises(
        FactorError,
        match=r"In schedule for 'B': fuse\(i.inner, j.inner\) at test_fused_tails.py:\d+: isl "
        r"could not recover the indices of 'B' from its loops within 20 operations: .*fuse "
        r"fewer loops, or split by factors that divide the extents",
    ):
        sl.lower(s, [a, b])
