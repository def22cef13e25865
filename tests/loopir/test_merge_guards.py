"""Unrolled copies share their guards (`loopir.gpu.merge_guards`), and nothing more: loops over
blocks are kernels of their own, never merged, even where two kernels' loops look alike."""

from __future__ import annotations

import numpy as np

import schedlang as sl
from tests.cuda import kernels


def test_two_kernels_over_the_same_grid_stay_two():
    """B's kernel must end before C's reads B backwards: their block loops are the same, and
    merging them would read B before other blocks write it (a race the simulator shows)."""
    s, inputs, outputs = kernels.two_kernels(999)
    kernel = sl.build(s, inputs + outputs, target="cuda")
    assert kernel.ptx.count(".entry") == 2
    a = np.random.default_rng(0).random(999).astype(np.float32)
    c = np.full(999, np.nan, np.float32)
    kernel.simulate(a, c)
    np.testing.assert_array_equal(c, a[::-1] * 2 + 1)
