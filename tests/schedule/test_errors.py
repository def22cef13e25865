"""One test per schedule error message: the primitive, the stage, the user's line, what to do."""

from __future__ import annotations

import inspect

import pytest

import schedlang as sl
from schedlang.schedule.errors import (
    AnnotationError,
    AxisError,
    BindError,
    FactorError,
    LegalityError,
    PlacementError,
)


def matmul():
    m, n, k_extent = 13, 11, 7
    a = sl.placeholder((m, k_extent), name="A")
    b = sl.placeholder((k_extent, n), name="B")
    k = sl.reduce_axis((0, k_extent), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c, sl.create_schedule(c)


def chain():
    a = sl.placeholder((sl.var("n"),), name="A")
    b = sl.compute(a.shape, lambda i: a[i] * 2.0, name="B")
    c = sl.compute(a.shape, lambda i: b[i] + 1.0, name="C")
    return a, b, c, sl.create_schedule(c)


def test_message_format_names_stage_call_and_line():
    *_, c, s = matmul()
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(FactorError) as info:
        s[c].split(c.op.axis[0], factor=0)
    assert str(info.value) == (
        f"In schedule for 'C': split(i, factor=0) at test_errors.py:{line}: "
        "factor must be a positive integer, got 0"
    )


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_split_bad_factor(bad):
    *_, c, s = matmul()
    with pytest.raises(FactorError, match="factor must be a positive integer"):
        s[c].split(c.op.axis[0], factor=bad)


def test_split_negative_nparts():
    *_, c, s = matmul()
    with pytest.raises(FactorError, match=r"nparts=-1\) at .*nparts must be a positive integer"):
        s[c].split(c.op.axis[0], nparts=-1)


def test_tile_is_all_or_nothing():
    """A bad second factor is found before the first split is applied: the stage is left as
    it was, so a notebook user can catch the error and tile again."""
    *_, c, s = matmul()
    before = (list(s[c].leaves), s.describe())
    with pytest.raises(FactorError, match=r"tile\(i, j, 4, 0\) at .*y_factor must be a positive"):
        s[c].tile(c.op.axis[0], c.op.axis[1], 4, 0)
    assert (list(s[c].leaves), s.describe()) == before
    xo, yo, xi, yi = s[c].tile(c.op.axis[0], c.op.axis[1], 4, 3)
    assert [a.name for a in s[c].leaves] == ["i.outer", "j.outer", "i.inner", "j.inner", "k"]


def test_tile_of_one_axis_twice():
    *_, c, s = matmul()
    with pytest.raises(AxisError, match=r"tile\(i, i, 4, 4\) at .*'i' is given twice"):
        s[c].tile(c.op.axis[0], c.op.axis[0], 4, 4)
    assert len(s[c].leaves) == 3


def test_split_both_factor_and_nparts():
    *_, c, s = matmul()
    with pytest.raises(FactorError, match="give exactly one of factor= and nparts="):
        s[c].split(c.op.axis[0], factor=2, nparts=2)


def test_split_nparts_on_symbolic_extent_keeps_its_loops_together():
    a, _, c, s = chain()
    outer, inner = s[c].split(c.op.axis[0], nparts=2)
    s[c].unroll(inner)
    with pytest.raises(
        FactorError, match=r"split\(i, nparts=2\) at test_errors.py:\d+: 'i' has a sym"
    ):
        sl.lower(s, [a, c])


def test_axis_of_another_stage():
    _, b, c, s = chain()
    with pytest.raises(AxisError, match=r"axis 'i' is an axis of stage 'B', not of 'C'"):
        s[c].split(b.op.axis[0], factor=2)


def test_axis_of_another_stage_returned_by_split():
    _, b, c, s = chain()
    bo, _ = s[b].split(b.op.axis[0], factor=2)
    with pytest.raises(AxisError, match=r"axis 'i.outer' belongs to stage 'B', not 'C'"):
        s[c].unroll(bo)


def test_axis_already_split_away():
    *_, c, s = matmul()
    s[c].split(c.op.axis[0], factor=4)
    with pytest.raises(
        AxisError, match=r"axis 'i' was already split into 'i.outer' and 'i.inner'; use the new"
    ):
        s[c].split(c.op.axis[0], factor=2)


def test_axis_already_fused_away():
    *_, c, s = matmul()
    i, j = c.op.axis
    s[c].fuse(i, j)
    with pytest.raises(AxisError, match=r"axis 'j' was already fused into 'i.j.fused'"):
        s[c].vectorize(j)


def test_fuse_non_adjacent():
    *_, c, s = matmul()
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    s[c].reorder(i, k, j)
    with pytest.raises(AxisError, match=r"adjacent loops.*\(i, k, j\); reorder first"):
        s[c].fuse(i, j)


def test_fuse_symbolic_inner_extent():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    c = sl.compute((m, n), lambda i, j: a[i, j] + 1.0, name="C")
    s = sl.create_schedule(c)
    fused = s[c].fuse(*c.op.axis)
    s[c].unroll(fused)
    with pytest.raises(FactorError, match=r"'j' has a symbolic extent here, so the fused index"):
        sl.lower(s, [a, c])


def test_binding_a_fuse_of_data_and_reduce_loops():
    *_, c, s = matmul()
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    ko, ki = s[c].split(s[c].fuse(j, k), factor=32)
    with pytest.raises(BindError, match=r"'j.k.fused.inner' fuses data loops with reduce loops"):
        s[c].bind(ki, sl.thread_axis("threadIdx.x"))


def test_reorder_duplicate():
    *_, c, s = matmul()
    i, j = c.op.axis
    with pytest.raises(AxisError, match=r"reorder\(i, j, i\) at .*an axis is listed twice"):
        s[c].reorder(i, j, i)


def test_two_loops_bound_to_one_tag():
    *_, c, s = matmul()
    i, j = c.op.axis
    s[c].bind(i, sl.thread_axis("threadIdx.x"))
    with pytest.raises(BindError, match=r"'i' is already bound to threadIdx.x; two loops"):
        s[c].bind(j, sl.thread_axis("threadIdx.x"))


def test_unknown_thread_tag():
    *_, c, s = matmul()
    with pytest.raises(BindError, match=r"unknown thread tag 'threadIdx.w'"):
        s[c].bind(c.op.axis[0], "threadIdx.w")
    with pytest.raises(sl.ScheduleError, match=r"unknown thread tag 'warp'"):
        sl.thread_axis("warp")


def test_reduce_axis_bound_to_block():
    *_, c, s = matmul()
    with pytest.raises(BindError, match=r"reduce axis 'k' bound to blockIdx.x.*rfactor"):
        s[c].bind(c.op.reduce_axis[0], sl.thread_axis("blockIdx.x"))


def test_annotate_twice_with_different_kinds():
    *_, c, s = matmul()
    j = c.op.axis[1]
    s[c].vectorize(j)
    s[c].vectorize(j)  # the same kind again is fine
    with pytest.raises(AnnotationError, match=r"unroll\(j\) at .*'j' is already vectorized"):
        s[c].unroll(j)


def test_split_after_bind():
    *_, c, s = matmul()
    i = c.op.axis[0]
    s[c].bind(i, sl.thread_axis("blockIdx.x"))
    with pytest.raises(AnnotationError, match=r"'i' is already bound to blockIdx.x; split or fuse"):
        s[c].split(i, factor=2)


def test_split_after_parallel():
    *_, c, s = matmul()
    i = c.op.axis[0]
    s[c].parallel(i)
    with pytest.raises(AnnotationError, match=r"'i' is already parallel; split or fuse before"):
        s[c].split(i, factor=2)


def test_compute_at_non_consumer():
    a = sl.placeholder((7,), name="A")
    b = sl.compute((7,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((7,), lambda i: b[i] + 1.0, name="C")
    d = sl.compute((7,), lambda i: c[i] - 1.0, name="D")
    e = sl.compute((7,), lambda i: a[i] * 3.0, name="E")
    s = sl.create_schedule([d, e])
    with pytest.raises(PlacementError, match=r"'E' does not read 'B'; compute_at needs a consumer"):
        s[b].compute_at(s[e], e.op.axis[0])
    # D reads B through C: allowed (as in TE), if C is computed inside D's loop too.
    s[b].compute_at(s[d], d.op.axis[0])
    with pytest.raises(PlacementError, match=r"'C' reads 'B' too.*compute 'C' inside that loop"):
        sl.lower(s, [a, d, e])
    s[c].compute_at(s[d], d.op.axis[0])
    assert "allocate B: float32[1]" in str(sl.lower(s, [a, d, e]))


def test_compute_at_itself():
    _, _, c, s = chain()
    with pytest.raises(PlacementError, match="a stage cannot be computed inside itself"):
        s[c].compute_at(s[c], c.op.axis[0])


def test_compute_inline_reduction():
    a = sl.placeholder((7, 5), name="A")
    k = sl.reduce_axis((0, 5), name="k")
    r = sl.compute((7,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    c = sl.compute((7,), lambda i: r[i] * 2.0, name="C")
    s = sl.create_schedule(c)
    with pytest.raises(PlacementError, match=r"In schedule for 'R': compute_inline\(\).*reduction"):
        s[r].compute_inline()


def test_compute_inline_output():
    _, _, c, s = chain()
    with pytest.raises(PlacementError, match=r"'C' is an output; outputs are stored"):
        s[c].compute_inline()


def test_primitive_on_placeholder():
    a, _, _, s = chain()
    with pytest.raises(PlacementError, match=r"'A' is a placeholder \(an input\)"):
        s[a].split("i", factor=2)
    with pytest.raises(PlacementError, match=r"'A' is a placeholder"):
        s[a].compute_root()


def test_compute_at_producer_read_by_another_stage():
    a = sl.placeholder((7,), name="A")
    b = sl.compute((7,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((7,), lambda i: b[i] + 1.0, name="C")
    d = sl.compute((7,), lambda i: b[i] + c[i], name="D")
    s = sl.create_schedule(d)
    s[b].compute_at(s[c], c.op.axis[0])
    with pytest.raises(PlacementError, match=r"'D' reads 'B' too.*compute it at root, inline it"):
        sl.lower(s, [a, d])


def test_parallel_reduce_axis_is_illegal_at_the_call():
    a, b, c, s = matmul()
    with pytest.raises(LegalityError, match=r"parallel\(k\) .*'k' runs the reduction of 'C'"):
        s[c].parallel(c.op.reduce_axis[0])
    assert s.records == []


def test_vectorize_reduce_axis_is_illegal_at_the_call():
    a, b, c, s = matmul()
    s[c].reorder(*c.op.axis, c.op.reduce_axis[0])
    _, inner = s[c].split(c.op.reduce_axis[0], factor=4)
    with pytest.raises(LegalityError, match=r"In schedule for 'C': vectorize\(k.inner\)"):
        s[c].vectorize(inner)
    assert len(s.records) == 2


def test_reordering_a_split_reduction_is_legal():
    """The updates of one reduction may run in any order, as in TE."""
    import numpy as np

    from schedlang.loopir.interpret import run

    a, b, c, s = matmul()
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=4)
    s[c].reorder(ki, *c.op.axis, ko)
    func = sl.lower(s, [a, b, c])
    rng = np.random.default_rng(3)
    a_np = rng.uniform(0.5, 1.5, (13, 7)).astype(np.float32)
    b_np = rng.uniform(0.5, 1.5, (7, 11)).astype(np.float32)
    out = np.full((13, 11), np.nan, np.float32)
    run(func, [a_np, b_np, out])
    np.testing.assert_allclose(out, a_np @ b_np, rtol=1e-5)


def test_out_of_bounds_read():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i + 1], name="C")
    s = sl.create_schedule(c)
    with pytest.raises(
        sl.AlgorithmError,
        match=r"compute 'C' reads 'A\[i \+ 1\]' out of bounds: at i=\d+, n=\d+ it reads A\[\d+\]",
    ):
        sl.lower(s, [a, c])


def test_lower_without_a_placeholder():
    a, b, c, s = matmul()
    with pytest.raises(sl.LoweringError, match=r"reads the placeholder 'B', which is not in args"):
        sl.lower(s, [a, c])


def test_lower_without_the_output():
    a, b, c, s = matmul()
    with pytest.raises(sl.LoweringError, match=r"the output 'C' is not in args; add it"):
        sl.lower(s, [a, b])


def test_tensor_not_in_schedule():
    _, _, c, s = chain()
    other = sl.placeholder((3,), name="Z")
    with pytest.raises(sl.ScheduleError, match=r"'Z' is not part of this schedule"):
        s[other]


def test_unroll_symbolic_extent():
    a, _, c, s = chain()
    s[c].unroll(c.op.axis[0])
    with pytest.raises(
        AnnotationError, match=r"unroll\(i\) at test_errors.py:\d+: 'i' has no constant"
    ):
        sl.lower(s, [a, c])
