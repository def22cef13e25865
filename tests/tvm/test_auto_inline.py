"""``te.schedule.AutoInline*``: which stages each inlines (elementwise, broadcast-tagged, any
non-reduction), never an output, a reduction or a stage already scheduled; the kernels they
give checked against the reference."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.tvm import te

RNG = np.random.default_rng(5)


def _chain():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    V = te.placeholder((m,), name="V")
    E = te.compute((m, n), lambda i, j: A[i, j] * 2, name="E")  # elementwise
    Bc = te.compute((m, n), lambda i, j: V[i] + E[i, j], name="Bc", tag="broadcast")
    Sh = te.compute((m, n), lambda i, j: Bc[i, n - 1 - j], name="Sh")  # injective
    k = te.reduce_axis((0, n), name="k")
    R = te.compute((m,), lambda i: te.sum(Sh[i, k], axis=k), name="R")
    return A, V, E, Bc, Sh, R


@pytest.mark.parametrize(
    ("auto_inline", "inlined"),
    [
        (tvm.te.schedule.AutoInlineElemWise, {"E"}),
        (tvm.te.schedule.AutoInlineBroadcast, {"Bc"}),
        (tvm.te.schedule.AutoInlineInjective, {"E", "Bc", "Sh"}),
    ],
)
def test_each_kind_inlines_its_stages_and_the_results_stay(auto_inline, inlined):
    A, V, E, Bc, Sh, R = _chain()
    s = te.create_schedule(R.op)
    assert all(s[t].attach_type == 1 for t in (E, Bc, Sh, R))
    auto_inline(s)
    assert {t.name for t in (E, Bc, Sh, R) if s[t].attach_type == 2} == inlined
    a = RNG.uniform(0.5, 2, (5, 7)).astype("float32")
    v = RNG.uniform(0.5, 2, (5,)).astype("float32")
    r = np.full((5,), np.nan, "float32")
    tvm.build(s, [A, V, R], "llvm")(a, v, r)
    np.testing.assert_allclose(r, sl.reference(R, {A: a, V: v}), rtol=1e-5)


def test_scheduled_stages_their_hosts_and_outputs_are_kept():
    A, V, E, Bc, Sh, R = _chain()
    s = te.create_schedule([Sh.op, R.op])
    s[E].compute_at(s[Bc], Bc.op.axis[0])
    tvm.te.schedule.AutoInlineInjective(s)
    # E is placed, Bc holds it at its loop, Sh is an output: none is inlined
    assert [s[t].attach_type for t in (E, Bc, Sh)] == [4, 1, 1]
