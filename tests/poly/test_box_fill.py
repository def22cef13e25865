"""Staged copies of global tensors fill their whole box and clamp their reads (`poly.box_fill`).

Where a tile overhangs the tensor's edge, the copy runs over its constant box with no guard,
and reads past the edge are clamped; where that would not be exact or cheap (a symbolic
extent, an extent the vector width does not divide) the copy keeps its guarded footprint. The
results are checked against the reference either way, with NaN-poisoned outputs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm
from schedlang.ir.printer import expr_str
from schedlang.loopir.core.nodes import For, If, Store
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.interpret import run
from tests.cuda import kernels
from tests.schedule.util import check, random_inputs


def _scaled(n, tile: int = 8):
    """``C = 2 A`` in tiles of `tile`, each tile's row of A staged locally at the tile loop."""
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 2.0, name="C")
    s = sl.create_schedule(c)
    al = s.cache_read(a, "local", [c])
    xo, _ = s[c].split(c.op.axis[0], factor=tile)
    s[al].compute_at(s[c], xo)
    return s, a, c


def _edge_guards(body, scope: str = "shared") -> list[str]:
    """Conditions on the block's tile (``i.outer``, ``j.outer``) around stores to `scope`:
    the guards of a copy's footprint at the edge. A copy's own thread split and double
    buffering guard with other loops."""
    found = []
    for node in walk_stmt(body):
        if not isinstance(node, If) or node.otherwise is not None:
            continue  # (the whole-tile split of `loopir.loops.full_tiles` has two branches)
        cond = expr_str(node.cond)
        if re.search(r"\b[ij]\.outer\b", cond) and any(
            isinstance(x, Store) and x.buffer.scope == scope for x in walk_stmt(node.then)
        ):
            found.append(cond)
    return found


def test_a_copy_past_the_edge_fills_its_box_on_the_cpu():
    s, a, c = _scaled(30)
    func = check(s, [a], [c])
    assert not _edge_guards(func.body, "local")
    assert "A[min(8 * i.outer + ax0, 29)]" in str(func), func


def test_a_copy_inside_the_tensor_is_not_clamped():
    s, a, c = _scaled(32)
    assert "A[min(" not in str(check(s, [a], [c]))


def test_a_symbolic_extent_keeps_the_guarded_footprint():
    s, a, c = _scaled(sl.var("n"))
    func = check(s, [a], [c], {"n": 30})
    assert "A[min(" not in str(func)


def _interpret(kernel, inputs, outputs, sizes=None):
    values = random_inputs(inputs, sizes or {}, seed=3)
    wants = [sl.evaluate(t, values) for t in outputs]
    results = [np.full(w.shape, np.nan, np.float32) for w in wants]
    run(kernel.lowered, [values[p] for p in inputs] + results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [200, 236])
def test_gemm_tiles_fill_whole_with_one_vector_load_each(size):
    """The example GEMM at sizes that leave partial 128-wide tiles: its shared tiles are
    filled without guards, still 16 bytes per load, and the k loop exists once (only the
    stores after it are split into whole and boundary versions)."""
    at, b, c = gpu_gemm.gemm(size, size, 16)
    kernel = sl.build(gpu_gemm.schedule(at, b, c), [at, b, c], target="cuda")
    assert not _edge_guards(kernel.lowered.body)
    loads = re.findall(r"ld\.global\.nc\.(\w+)", kernel.ptx)
    assert loads and set(loads) == {"v4"}, loads
    body = kernel.lowered.body
    k_loops = [x for x in walk_stmt(body) if isinstance(x, For) and x.var.name == "k.outer"]
    assert len(k_loops) == 1
    _interpret(kernel, [at, b], [c])


def test_an_extent_the_vector_width_does_not_divide_keeps_its_guards():
    at, b, c = gpu_gemm.gemm(202, 202, 16)
    kernel = sl.build(gpu_gemm.schedule(at, b, c), [at, b, c], target="cuda")
    assert _edge_guards(kernel.lowered.body)
    _interpret(kernel, [at, b], [c])


@pytest.mark.parametrize("size", [100, 1000])
def test_te_recipe_fills_its_shared_tiles_whole(size):
    kernel = sl.build(*_te_gemm(size), target="cuda")
    assert not _edge_guards(kernel.lowered.body)
    assert "A[min(" in str(kernel.lowered)


def _te_gemm(size):
    s, inputs, outputs = kernels.te_gemm_64(size)
    return s, [*inputs, *outputs]
