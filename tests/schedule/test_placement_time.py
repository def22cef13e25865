"""Schedules whose compute_at footprints isl once stated in ever more pieces build in seconds.

Two shapes did: TOPI's x86 ``dense_pack`` schedule with its bias stage, where the dense stage
is computed at a fused loop of the bias stage and its accumulator at a fused loop of the dense
stage (more than 600 s, in isl's pieces of the footprint's corner); and a chain of stencils
with diagonal taps, each computed at the next one's tile, whose footprints (five pieces, one
per tap) multiplied stage by stage (2.7 s at depth 2, 170 s at depth 6). Each is checked
against the reference at small odd sizes, and built at its full size within a bound several
times what it takes.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
from examples import te_dense_pack, x_stencils
from schedlang.poly import footprint_box

from .util import check

# Either build takes 2-7 s on a 2-core machine shared with other jobs (LLVM about half of the
# stencils' time); before, minutes.
BUILD_SECONDS = 20


def _elapsed(build) -> float:
    start = time.perf_counter()
    build()
    return time.perf_counter() - start


def test_dense_pack_with_bias_matches_at_odd_sizes():
    data, weight, bias, dense, out = te_dense_pack.dense_pack(37, 70, 19)
    check(te_dense_pack.schedule(dense, out), [data, weight, bias], [out])


def test_dense_pack_without_bias_matches_at_odd_sizes():
    data, weight, _, dense, out = te_dense_pack.dense_pack(37, 70, 19, with_bias=False)
    check(te_dense_pack.schedule(dense, out), [data, weight], [out])


def test_dense_pack_with_bias_builds_in_seconds_at_its_size():
    data, weight, bias, dense, out = te_dense_pack.dense_pack(128, 1000, 1024)
    s = te_dense_pack.schedule(dense, out)
    built = []
    seconds = _elapsed(lambda: built.append(tvm.build(s, [data, weight, bias, out], "llvm")))
    assert seconds < BUILD_SECONDS  # more than 600 s before
    rng = np.random.default_rng(5)
    shapes = ((128, 1024), (1000, 1024), (1000,))
    arrays = [rng.uniform(-1, 1, shape).astype("float32") for shape in shapes]
    result = np.full((128, 1000), np.nan, "float32")
    built[0](*arrays, result)
    want = arrays[0] @ arrays[1].T + arrays[2]
    np.testing.assert_allclose(result, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("depth", [2, 3])
def test_x_stencil_chain_matches_at_odd_sizes(depth):
    a, stages = x_stencils.x_stencils(29, 23, depth)
    check(x_stencils.schedule(stages, 8), [a], [stages[-1]])


def test_x_stencil_chain_of_six_builds_in_seconds():
    a, stages = x_stencils.x_stencils(257, 251, 6)
    s = x_stencils.schedule(stages)
    assert _elapsed(lambda: sl.build(s, [a, stages[-1]], target="cpu")) < BUILD_SECONDS  # 170 s


def test_a_placement_isl_would_state_in_too_many_pieces_is_refused_at_once(monkeypatch):
    """B is stored whole in its argument, so it computes exactly the twelve separate elements
    C reads at each i: twelve pieces, refused here under a limit lowered to eight."""
    monkeypatch.setattr(footprint_box, "SIZE_LIMIT", 8)
    a = sl.placeholder((60,), name="A")
    b = sl.compute((60,), lambda i: a[i] * 3.0, name="B")
    c = sl.compute((20,), lambda i: sum(b[i + 3 * k] for k in range(12)), name="C")
    s = sl.create_schedule(c)
    s[b].compute_at(s[c], c.op.axis[0])
    with pytest.raises(sl.ScheduleError, match=r"compute_at\(s\[C\], i\).* 12 pieces .*minutes"):
        sl.lower(s, [a, b, c])


def test_a_footprint_box_past_isl_s_budget_is_refused_in_seconds():
    """Persistent blocks over groups of tiles: the tile index through a fuse of fused loops and
    a split of that nests floors three deep, and isl's bounds of B's footprint at the
    warpgroup's loop did not end in 300 s. The box is refused when isl runs out of its budget
    of operations (`placement.BOX_OPERATIONS`), naming the compute_at."""
    n = 8192
    a = sl.placeholder((n, n), name="A")
    b = sl.compute((n, n), lambda i, j: a[i, j] * 2.0, name="B")
    c = sl.compute((n, n), lambda i, j: b[i, j] + 1.0, name="C")
    s = sl.create_schedule(c.op)
    bi, ii = s[c].split(c.op.axis[0], factor=128)
    bj, jj = s[c].split(c.op.axis[1], factor=256)
    gi, ii = s[c].split(ii, factor=64)
    gj, bj = s[c].split(bj, factor=8)
    s[c].reorder(gj, bi, bj, gi, ii, jj)
    turn, block = s[c].split(s[c].fuse(gj, s[c].fuse(bi, bj)), factor=132)
    s[c].reorder(block, turn, gi, ii, jj)
    s[b].compute_at(s[c], gi)
    start = time.perf_counter()
    with pytest.raises(sl.ScheduleError, match=r"compute_at\(s\[C\], i\.inner\.outer\).*what "
                       r"'B' reads .* takes isl more than 100,000 operations"):  # fmt: skip
        sl.lower(s, [a, c])
    assert time.perf_counter() - start < BUILD_SECONDS
