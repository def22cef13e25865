"""Scalar parameters (``sl.var(name, "float32")``, a 0-d input the kernel is called with)
under the placement and memory primitives: ``s[alpha]`` is its stage, ``cache_read(alpha,
scope, readers)`` stages it in a one-element buffer (one load where the cache is computed,
instead of one per use), and a stage that reads that cache can be computed at a loop."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl

from .util import check

SIZES = {"n": 13}


def _scaled():
    n, m = sl.var("n"), 7
    alpha = sl.var("alpha", "float32")
    a = sl.placeholder((n, m), name="A")
    b = sl.compute((n, m), lambda i, j: a[i, j] * alpha, name="B")
    c = sl.compute((n, m), lambda i, j: b[i, j] + alpha, name="C")
    return alpha, a, b, c


def test_the_scalar_is_a_stage_of_the_schedule():
    alpha, a, b, c = _scaled()
    s = sl.create_schedule(c)
    assert s[alpha] is s[alpha.tensor] and s[alpha].name == "alpha"


@pytest.mark.parametrize("given", ["the var", "its tensor"])
def test_a_cache_of_the_scalar_is_one_element_loaded_once_per_row(given):
    alpha, a, b, c = _scaled()
    s = sl.create_schedule(c)
    cached = s.cache_read(alpha if given == "the var" else alpha.tensor, "local", [b, c])
    assert cached.shape == () and s[cached].name == "alpha.local"
    i, _ = c.op.axis
    s[b].compute_at(s[c], i)
    s[cached].compute_at(s[c], i)
    text = str(check(s, [a, alpha], [c], SIZES))
    assert "allocate alpha.local: float32[] in local  # 4 bytes" in text
    assert text.count("alpha.local[] = alpha[]") == 1
    assert "alpha[]" not in text.replace("alpha.local[] = alpha[]", "")


def test_a_stage_reading_the_cache_at_a_split_loop():
    """The cache at the root, its reader computed at an outer loop of a non-divisible split."""
    alpha, a, b, c = _scaled()
    s = sl.create_schedule(c)
    s.cache_read(alpha, "global", [b])
    io, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], io)
    check(s, [a, alpha], [c], SIZES)


def test_the_cache_computed_inside_its_reader():
    alpha, a, b, c = _scaled()
    s = sl.create_schedule(c)
    cached = s.cache_read(alpha, "local", [b])
    s[cached].compute_at(s[b], b.op.axis[1])
    text = str(check(s, [a, alpha], [c], SIZES))
    assert "alpha.local[] = alpha[]" in text


@pytest.mark.parametrize("scope", ["local", "shared"])
def test_on_the_gpu_a_cache_per_thread_or_per_block(scope):
    alpha, a, b, c = _scaled()
    s = sl.create_schedule(c)
    cached = s.cache_read(alpha, scope, [b])
    fused = s[c].fuse(*c.op.axis)
    bx, tx = s[c].split(fused, factor=32)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], tx)
    s[cached].compute_at(s[c], tx if scope == "local" else bx)
    if scope == "shared":  # one thread of the block loads it
        s[cached].set_store_predicate(sl.thread_axis("threadIdx.x").var == 0)
    text = str(check(s, [a, alpha], [c], SIZES))
    assert f"allocate alpha.{scope}: float32[] in {scope}" in text


def test_the_kernel_takes_a_number_for_the_cached_scalar():
    alpha, a, b, c = _scaled()
    s = sl.create_schedule(c)
    cached = s.cache_read(alpha, "local", [b])
    s[cached].compute_at(s[b], b.op.axis[0])
    kernel = sl.build(s, [a, alpha, c])
    x = np.random.default_rng(5).uniform(0.5, 2.0, (9, 7)).astype("float32")
    np.testing.assert_allclose(kernel(x, -1.25), sl.reference(c, {a: x, alpha: -1.25}), rtol=1e-6)
