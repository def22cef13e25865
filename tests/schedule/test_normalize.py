"""``s.normalize()`` (TE's): every loop already starts at 0, whatever the range of its axis."""

from __future__ import annotations

import numpy as np

import schedlang as sl


def test_loops_over_ranges_that_start_elsewhere_run_from_zero():
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")
    k = sl.reduce_axis((3, n), name="k")
    b = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b.op)
    ko, ki = s[b].split(k, factor=4)
    assert s.normalize() is s
    text = str(sl.lower(s, [a, b]))
    assert "for k.outer in range(0, n // 4):" in text  # ceil((n - 3) / 4) steps from 0
    assert "A[i, 4 * k.outer + k.inner + 3]" in text
    x = np.random.default_rng(2).uniform(-1, 1, (11, 11)).astype("float32")
    out = np.full(11, np.nan, "float32")
    sl.build(s, [a, b])(x, out)
    np.testing.assert_allclose(out, x[:, 3:].sum(axis=1), rtol=1e-5)
