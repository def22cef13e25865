"""Three or more loops of a stage fused and split, the two loops of the split bound to a block
and a thread index, with a stage computed inside them: TOPI's CUDA reduce schedule of an
output of several axes (its rfactor stage computed at the cross-thread reduction). isl's fused
index serves such loops; the code generator's own fused loop takes no thread index."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl

from .ptxas import assemble


@pytest.mark.parametrize("shape", [(3, 5, 1), (2, 3, 5, 3)])
def test_fused_output_loops_on_blocks_and_threads_with_a_cross_thread_reduction(shape):
    a = sl.placeholder((*shape, 11), name="A")
    k = sl.reduce_axis((0, 11), "k")
    b = sl.compute(shape, lambda *i: sl.max(a[(*i, k)], axis=k), name="B")
    s = sl.create_schedule(b.op)
    _, ki = s[b].split(k, factor=4)
    bf = s.rfactor(b, ki)
    tx, ty = sl.thread_axis("threadIdx.x"), sl.thread_axis("threadIdx.y")
    s[b].bind(s[b].op.reduce_axis[0], tx)
    s[bf].compute_at(s[b], s[b].op.reduce_axis[0])
    block, thread = s[b].split(s[b].fuse(*s[b].op.axis), factor=8)
    s[b].bind(thread, ty)
    s[b].bind(block, sl.thread_axis("blockIdx.x"))
    fused_index = sl.thread_axis("blockIdx.x") * 8 + ty  # as TOPI's predicate writes it
    s[b].set_store_predicate(sl.all(tx.equal(0), fused_index < int(np.prod(shape))))
    kernel = sl.build(s, [a, b], target="cuda")
    x = np.random.default_rng(3).uniform(-2, 2, (*shape, 11)).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    kernel.simulate(x, out)
    np.testing.assert_allclose(out, sl.reference(b, {a: x}), rtol=1e-6)
    assemble(kernel.ptx, "sm_90a")
