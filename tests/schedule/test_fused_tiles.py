"""Three or more tile loops fused into one, with stages computed inside the tiles: isl keeps
the tile loops and the code generator fuses them, each tile index recovered by division and
modulo, so that every stage computed inside sees plain tile indices (isl's own fused index
recovered them by cases in each such stage). Checked against the reference with NaN-poisoned
outputs at sizes the tiles do not divide, on the CPU and in the GPU simulator."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import FactorError

RNG = np.random.default_rng(5)


def _tiles(shape, parts: int, bind: str | None = None, use: str | None = None):
    x = sl.placeholder(shape, name="X")
    p = sl.compute(shape, lambda i, j, k: x[i, j, k] * 2.0 + 1.0, name="P")
    out = sl.compute(shape, lambda i, j, k: p[i, j, k] - p[i, j, 0], name="Out")
    s = sl.create_schedule(out)
    i, j, k = out.op.axis
    io, ii = s[out].split(i, factor=3)
    jo, ji = s[out].split(j, factor=4)
    ko, ki = s[out].split(k, factor=2)
    s[out].reorder(io, jo, ko, ii, ji, ki)
    outer = inner = s[out].fuse(io, jo, ko)
    if parts:
        outer, inner = s[out].split(outer, nparts=parts)
    s[p].compute_at(s[out], ii)
    if bind is not None:
        s[out].bind(outer, sl.thread_axis(bind))
        s[out].bind(ii, sl.thread_axis("threadIdx.x"))
    else:
        s[out].parallel(outer)
    if use == "compute_at":  # beside P inside the tiles
        s[s.cache_read(x, "local", [p])].compute_at(s[out], inner)
    elif use == "vectorize":
        s[out].vectorize(inner)
    return s, [x, out]


def _check(kernel, shape, simulate=False):
    x = RNG.uniform(-1, 1, shape).astype("float32")
    out = np.full(shape, np.nan, "float32")
    (kernel.simulate if simulate else kernel)(x, out)
    p = x * 2 + 1
    np.testing.assert_allclose(out, p - p[:, :, :1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("shape", "parts"), [((7, 9, 5), 4), ((10, 5, 3), 7)])
def test_tiles_fused_and_shared_out_in_parallel(shape, parts):
    s, args = _tiles(shape, parts)
    text = str(sl.lower(s, args))
    assert "let i.outer = i.outer.j.outer.k.outer.fused // " in text
    assert "select(" not in text  # one expression per tile index, no cases
    _check(sl.build(s, args), shape)


def test_a_single_tile():
    """isl makes no loop for a tile index of one value: the fuse is made of the loops it
    makes, here none."""
    s, args = _tiles((3, 4, 2), 2)
    _check(sl.build(s, args), (3, 4, 2))


@pytest.mark.parametrize("parts", [5, 0])  # 0: a block a tile
def test_tiles_fused_and_shared_out_among_blocks_simulated(parts):
    shape = (7, 9, 5)
    s, args = _tiles(shape, parts, bind="blockIdx.x")
    kernel = sl.build(s, args, target="cuda")
    assert "# blockIdx.x" in str(kernel.lowered)
    _check(kernel, shape, simulate=True)


@pytest.mark.gpu
def test_tiles_fused_and_shared_out_among_blocks_on_the_gpu():
    shape = (10, 5, 3)
    s, args = _tiles(shape, 7, bind="blockIdx.x")
    _check(sl.build(s, args, target="cuda"), shape)


@pytest.mark.parametrize(
    ("use", "match"),
    [
        ("compute_at", "'X.local' cannot be computed at its loops"),
        ("vectorize", "can be serial or parallel"),
    ],
)
def test_uses_of_fused_tiles_the_code_generator_cannot_make_are_refused(use, match):
    s, args = _tiles((7, 9, 5), 4, use=use)
    with pytest.raises(FactorError, match=match):
        sl.lower(s, args)
