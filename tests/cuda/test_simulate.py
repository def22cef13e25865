"""`CudaKernel.simulate`: a GPU schedule run on the CPU in the loop-IR interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl


def _shared_stencil():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n - 2,), lambda i: a[i] + a[i + 1] * 2.0 + a[i + 2], name="B")
    s = sl.create_schedule(b)
    bx, tx = s[b].split(b.op.axis[0], factor=16)
    s[b].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].bind(tx, sl.thread_axis("threadIdx.x"))
    cached = s.cache_read(a, "shared", [b])
    s[cached].compute_at(s[b], bx)
    s[cached].bind(s[cached].op.axis[0], sl.thread_axis("threadIdx.x"))
    return a, b, s


def test_simulate_matches_the_reference_with_a_shared_halo():
    a, b, s = _shared_stencil()
    kernel = sl.build(s, [a, b], target="cuda")
    a_np = np.random.default_rng(0).uniform(0.5, 1.5, 53).astype(np.float32)
    out = np.full(51, np.nan, np.float32)
    kernel.simulate(a_np, out)
    np.testing.assert_allclose(out, sl.reference(b, {a: a_np}), rtol=1e-6)


def test_simulate_checks_its_arguments_like_a_call():
    a, b, s = _shared_stencil()
    kernel = sl.build(s, [a, b], target="cuda")
    with pytest.raises(TypeError, match=r"has no size 'm' \(its sizes: n\)"):
        kernel.simulate(np.ones(53, np.float32), np.ones(51, np.float32), m=3)
    with pytest.raises(ValueError, match="B"):
        kernel.simulate(np.ones(53, np.float32), np.ones(50, np.float32))
    with pytest.raises(TypeError, match=r"'B' .*float32.*float64|dtype"):
        kernel.simulate(np.ones(53, np.float32), np.ones(51, np.float64))


def test_simulate_refuses_a_size_past_the_index_type_like_a_call():
    a, b, s = _shared_stencil()
    kernel = sl.build(s, [a, b], target="cuda")
    big = 2**31 + 1  # arrays of that many elements, all one element: nothing allocated

    def huge(n):
        return np.lib.stride_tricks.as_strided(np.ones(1, np.float32), (n,), (0,))

    with pytest.raises(ValueError, match=r"size 'n' is 2147483649, which does not fit int32"):
        kernel.simulate(huge(big), huge(big - 2))
    with pytest.raises(ValueError, match=r"is n - 2 = 2147483647 with n=2147483649, but its"):
        kernel.simulate(huge(big), huge(3))
