"""Index arithmetic that passes through values past int32 though every index fits: isl's
recovery of four loops fused into one and split (``(32640 * f + 32767 * t + 32767) // 32768``)
reached 4.3e9 for a 16-million-element tensor with a leading dimension of 1, and wrapped in
int32: the kernel wrote outside its output. Such a kernel is lowered in int64 (`overflow`)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import Buffer, For, Store
from schedlang.loopir.index.overflow import may_overflow

WIDE = (1, 512, 512, 64)  # 16.8 million elements: the recovered indices pass 2**31
NARROW = (1, 256, 512, 64)


def _doubled(shape, target: str):
    a = sl.placeholder(shape, name="A")
    c = sl.compute(shape, lambda t, b, i, e: a[t, b, i, e] * 2.0, name="C")
    s = sl.create_schedule(c)
    outer, inner = s[c].split(s[c].fuse(*c.op.axis), factor=128)
    if target == "cpu":
        s[c].parallel(outer)
    else:
        s[c].bind(outer, sl.thread_axis("blockIdx.x"))
        s[c].bind(inner, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [a, c], target=target)


def test_a_kernel_whose_recovered_indices_pass_int32_is_lowered_in_int64():
    assert _doubled(WIDE, "cuda -arch=sm_90").lowered.index_dtype == "int64"
    assert _doubled(NARROW, "cuda -arch=sm_90").lowered.index_dtype == "int32"


def test_it_computes_every_element_on_the_cpu():
    kernel = _doubled(WIDE, "cpu")
    assert kernel.lowered.index_dtype == "int64"
    x = np.random.default_rng(7).uniform(0.5, 2.0, WIDE).astype(np.float32)
    out = np.full(WIDE, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.gpu
def test_it_computes_every_element_on_the_gpu():
    kernel = _doubled(WIDE, "cuda")
    x = np.random.default_rng(8).uniform(0.5, 2.0, WIDE).astype(np.float32)
    out = np.full(WIDE, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_array_equal(out, x * 2)


def _nest(coefficient: int, extent: int) -> For:
    i = Var("i", "int32", "axis")
    out = Buffer("out", "float32", (const(extent),))
    index = (i * coefficient + coefficient) // coefficient - 1
    return For(i, const(0), const(extent), "serial", Store(out, (index,), const(1.0)))


def test_bounds_are_taken_over_the_loops_ranges():
    assert not may_overflow(_nest(1000, 1000))  # at most a million on the way
    assert may_overflow(_nest(70000, 40000))  # 2.8e9 on the way to an index under 40000


def test_a_range_that_depends_on_a_size_claims_nothing():
    n = Var("n", "int32", "size")
    i = Var("i", "int32", "axis")
    out = Buffer("out", "float32", (n,))
    store = Store(out, ((i * 70000) // 70000,), const(1.0))
    assert not may_overflow(For(i, const(0), n, "serial", store))


def test_shared_parts_of_an_expression_are_bounded_once():
    """Generated expressions share subexpressions: bounded as a tree, sixty doublings of one
    part would be 2**60 visits."""
    i = Var("i", "int32", "axis")
    index = i
    for _ in range(60):
        index = index + index  # one node, two references
    out = Buffer("out", "float32", (const(4),))
    assert may_overflow(For(i, const(0), const(4), "serial", Store(out, (index,), const(1.0))))
