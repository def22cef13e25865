"""TE's introspection of schedules and ops: ``leaf_iter_vars``, ``all_iter_vars``,
``relations``, ``is_output``, ``origin_op``, ``s.outputs``, ``tag_scope`` and ``op.attrs``,
written as TE code and checked with TE's semantics (the loops read back are the ones the user
holds, and passing them back to primitives schedules the same loops)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import schedlang.tvm as tvm
from schedlang.tvm import te


def _copy_2d(m=None, n=None):
    m = te.size_var("m") if m is None else m
    n = te.size_var("n") if n is None else n
    A = te.placeholder((m, n), name="A")
    T = te.compute((m, n), lambda i, j: A[i, j], name="T")
    return A, T


def test_split_puts_outer_then_inner_where_the_loop_was():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    i, j = T.op.axis
    assert tuple(s[T].leaf_iter_vars) == (i, j)
    xo, xi = s[T].split(i, factor=10)
    assert tuple(s[T].leaf_iter_vars) == (xo, xi, j)
    assert s[T].all_iter_vars == [i, j, xo, xi]


def test_the_roots_stay_in_all_iter_vars_and_leave_the_leaves():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    i, j = T.op.axis
    xo, xi = s[T].split(i, factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    fused = s[T].fuse(xi2, j)
    assert tuple(s[T].leaf_iter_vars) == (xo, xi1, fused)
    assert s[T].all_iter_vars == [i, j, xo, xi, xi1, xi2, fused]
    assert i not in s[T].leaf_iter_vars and xi not in s[T].leaf_iter_vars
    assert j in s[T].all_iter_vars and i in s[T].all_iter_vars


def test_reorder_is_read_back_in_the_order_given():
    m = te.size_var("m")
    A = te.placeholder((m + 1,), name="A")
    T = te.compute((m,), lambda i: A[i + 1], name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    order = (xi2, xi1, xo)
    assert tuple(s[T].leaf_iter_vars) != order
    s[T].reorder(*order)
    assert tuple(s[T].leaf_iter_vars) == order
    with pytest.raises(tvm.TVMError, match="listed twice"):
        s[T].reorder(xi2, xi1, xi2)


def test_tile_and_fuse_are_read_back_as_te_orders_them():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(T.op.axis[0], T.op.axis[1], x_factor=10, y_factor=5)
    assert tuple(s[T].leaf_iter_vars) == (xo, yo, xi, yi)
    fused = s[T].fuse(xo, yo)
    assert tuple(s[T].leaf_iter_vars) == (fused, xi, yi)
    assert any(isinstance(r, te.schedule.Fuse) for r in s[T].relations)


def test_fusing_a_split_loop_with_a_root_loop():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    y = T.op.axis[1]
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    fused = s[T].fuse(xi, y)
    assert tuple(s[T].leaf_iter_vars) == (xo, fused)


def test_a_root_loop_stays_a_leaf_through_other_primitives():
    m, n, k = (te.size_var(v) for v in "mnl")
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((n, k), name="B")
    AA = te.compute((m, k), lambda i, j: A[i, j], name="AA")
    T = te.compute((m, n, k), lambda i, j, kk: AA[i, kk] * B[j, kk], name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    s[AA].compute_at(s[T], xi1)
    s[AA].split(AA.op.axis[0], factor=10)
    s[T].reorder(xi2, xi1)
    assert T.op.axis[1] in s[T].leaf_iter_vars
    assert tuple(s[T].leaf_iter_vars) == (xo, xi2, xi1, T.op.axis[1], T.op.axis[2])


def test_relations_name_the_loops_of_each_split_and_fuse():
    A, T = _copy_2d(64, 48)
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=8)
    yo, yi = s[T].split(T.op.axis[1], nparts=4)
    fused = s[T].fuse(xi, yo)
    split_x, split_y, fuse = s[T].relations
    assert isinstance(split_x, te.schedule.Split) and isinstance(fuse, te.schedule.Fuse)
    assert split_x.outer is xo and split_x.inner is xi
    assert (split_x.factor, split_x.nparts) == (8, None)
    assert (split_y.factor, split_y.nparts) == (None, 4)
    assert split_y.outer is yo and split_y.inner is yi
    assert fuse.outer is xi and fuse.inner is yo and fuse.fused is fused
    assert split_y.parent == s[T].relations[1].parent and split_x.parent != split_y.parent


def test_a_split_of_a_made_loop_names_it_as_its_parent():
    A, T = _copy_2d(64, 48)
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=8)
    xio, xii = s[T].split(xi, factor=2)
    assert s[T].relations[1].parent is xi
    assert (s[T].relations[1].outer, s[T].relations[1].inner) == (xio, xii)


def test_an_itervar_and_a_made_loop_compare_as_different_objects():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    xo, _ = s[T].split(T.op.axis[0], factor=4)
    j = T.op.axis[1]
    assert not (xo == j) and not (j == xo)
    assert xo != j and j != xo
    assert (j, xo) != (xo, j)


def test_loops_read_back_schedule_the_same_loops_and_the_kernel_matches_numpy():
    A = te.placeholder((37, 20), name="A")
    B = te.placeholder((20,), name="B")
    C = te.compute((37, 20), lambda i, j: A[i, j] * 2.0 + B[j], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(s[C].leaf_iter_vars[0], 4)
    assert s[C].leaf_iter_vars[:2] == [xo, xi]
    s[C].reorder(s[C].leaf_iter_vars[2], *s[C].leaf_iter_vars[:2])
    assert s[C].leaf_iter_vars == [C.op.axis[1], xo, xi]
    fused = s[C].fuse(*s[C].leaf_iter_vars[:2])
    s[C].unroll(s[C].leaf_iter_vars[-1])
    assert s[C].leaf_iter_vars == [fused, xi]

    f = tvm.build(s, [A, B, C], target="llvm")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (37, 20)).astype("float32")
    b = rng.uniform(-1, 1, 20).astype("float32")
    dev = tvm.cpu(0)
    out = tvm.nd.array(np.zeros((37, 20), "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), out)
    np.testing.assert_allclose(out.numpy(), a * 2 + b, rtol=1e-6)


def test_a_leaf_read_back_after_the_split_is_taken_is_refused():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    first = s[T].leaf_iter_vars[0]
    s[T].split(first, factor=4)
    with pytest.raises(tvm.TVMError, match="already split"):
        s[T].split(first, factor=2)


def test_rfactor_gives_the_stage_its_new_loops():
    n = te.size_var("n")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    s.rfactor(B, k1)
    assert len(s[B].all_iter_vars) == 2
    assert s[B].all_iter_vars == list(s[B].op.axis + s[B].op.reduce_axis)
    assert s[B].origin_op is B.op and s[B].op is not B.op


def test_is_output_and_outputs_name_what_the_caller_gets():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((16,), lambda i: B[i] - 1.0, name="D")
    s = te.create_schedule([C.op, D.op])
    assert s.outputs == [C.op, D.op]
    assert [st.is_output for st in (s[A], s[B], s[C], s[D])] == [False, False, True, True]
    CL = s.cache_write(C, "local")
    assert s[C].is_output and not s[CL].is_output
    assert C.op in s.outputs and s[s.outputs[0]] is s[C]
    assert s[C].origin_op is C.op and s[CL].origin_op is CL.op


def test_a_tag_scope_tags_the_computes_made_inside_it():
    n, m, k = (te.size_var(v) for v in "nml")
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((m, k), name="B")
    with te.tag_scope(tag="gemm"):
        r = te.reduce_axis((0, k), name="r")
        C = te.compute(
            (n, m),
            lambda i, j: te.sum(A[i, r] * B[j, r], axis=r),
            attrs={"hello": 1, "arr": [10, 12]},
        )
    D = te.compute((n, m), lambda i, j: C[i, j] + 1.0, name="D")
    assert C.op.tag == "gemm" and D.op.tag == ""
    assert "hello" in C.op.attrs and "xx" not in C.op.attrs
    assert C.op.attrs["hello"].value == 1
    assert [v.value for v in C.op.attrs["arr"]] == [10, 12]
    with pytest.raises(TypeError):
        C.op.attrs["more"] = 2


@te.tag_scope(tag="conv")
def _conv(data, weight):
    N, IC, H, W = data.shape
    OC, _, KH, KW = weight.shape
    ic = te.reduce_axis((0, IC), name="ic")
    dh = te.reduce_axis((0, KH), name="dh")
    dw = te.reduce_axis((0, KW), name="dw")
    return te.compute(
        (N, OC, H - KH + 1, W - KW + 1),
        lambda b, oc, h, w: te.sum(
            data[b, ic, h + dh, w + dw] * weight[oc, ic, dh, dw], axis=[ic, dh, dw]
        ),
        name="conv",
    )


def test_a_tag_scope_on_a_function_tags_what_it_computes():
    A = te.placeholder((1, 3, 8, 8), name="A")
    W = te.placeholder((4, 3, 3, 3), name="W")
    C = _conv(A, W)
    assert C.op.tag == "conv" and len(C.op.attrs) == 0
    assert _conv.__name__ == "_conv"
    assert te.compute((2,), lambda i: A[0, 0, 0, i], name="after").op.tag == ""

    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, W, C], target="llvm")
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (1, 3, 8, 8)).astype("float32")
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype("float32")
    out = tvm.nd.array(np.zeros((1, 4, 6, 6), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(w), out)
    windows = np.lib.stride_tricks.sliding_window_view(a, (3, 3), axis=(2, 3))
    expected = np.einsum("bchwyx,ocyx->bohw", windows, w)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_tag_scopes_do_not_nest():
    A = te.placeholder((1, 3, 8, 8), name="A")
    W = te.placeholder((4, 3, 3, 3), name="W")
    with pytest.raises(ValueError, match=r"tag_scope\('conv'\) inside tag_scope\('outer'\)"):
        with te.tag_scope(tag="outer"):
            _conv(A, W)
    with pytest.raises(ValueError, match="tags do not nest; give the tag in one place"):
        with te.tag_scope(tag="outer"):
            te.compute((8,), lambda i: A[0, 0, 0, i], name="B", tag="inner")
    assert te.compute((8,), lambda i: A[0, 0, 0, i], name="B").op.tag == ""


def test_an_unused_tag_scope_warns():
    with pytest.warns(UserWarning, match=r"tag_scope\('idle'\) was not used"):
        with te.tag_scope("idle"):
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with te.tag_scope("used"):
            te.compute((2,), lambda i: i * 1.0)


def test_iter_var_attrs_say_how_each_loop_runs():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(T.op.axis[0], T.op.axis[1], x_factor=10, y_factor=5)
    s[T].vectorize(yi)
    s[T].unroll(xi)
    s[T].parallel(xo)
    attrs = s[T].iter_var_attrs
    assert attrs[xi].iter_type == tvm.te.schedule.IterVar.Unrolled
    assert attrs[yi].iter_type == tvm.te.schedule.IterVar.Vectorized
    assert attrs[xo].iter_type == tvm.te.schedule.IterVar.Parallelized
    assert yo not in attrs
    assert isinstance(xo, tvm.te.schedule.IterVar) and isinstance(
        T.op.axis[0], tvm.te.schedule.IterVar
    )


def test_bound_loops_carry_their_thread():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    bx, tx = s[T].split(T.op.axis[0], factor=32)
    s[T].bind(tx, te.thread_axis("threadIdx.x"))
    attrs = s[T].iter_var_attrs
    assert attrs[tx].bind_thread == "threadIdx.x"
    assert attrs[tx].iter_type == tvm.te.schedule.IterVar.DataPar


def test_schedule_errors_are_runtime_errors_as_te_raises():
    A, T = _copy_2d()
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    with pytest.raises(RuntimeError, match="adjacent"):
        s[T].fuse(xo, T.op.axis[1])
    with pytest.raises(tvm.error.TVMError, match="listed twice"):
        s[T].reorder(xi, xi)
