"""Tensor intrinsics declared by the user (`sl.decl_tensor_intrin`): a matrix-vector product
whose C functions (given as LLVM IR, tests/schedule/data/gemv.ll) replace the tile loops, on
the CPU, checked against numpy with NaN-poisoned outputs; and each way a declaration or a
tensorize with one is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import LoweringError
from schedlang.schedule.errors import TensorizeError

IR = (Path(__file__).parent / "data" / "gemv.ll").read_text()
RNG = np.random.default_rng(41)
N, M, L = 24, 48, 32


def _product():
    a = sl.placeholder((N, L), name="A")
    b = sl.placeholder((M, L), name="B")
    k = sl.reduce_axis((0, L), name="k")
    c = sl.compute((N, M), lambda i, j: sl.sum(a[i, k] * b[j, k], axis=k), name="C")
    return a, b, c


def _gemv(m, l, parts="set"):
    """c[i] = sum_k a[k] * b[i, k], as gemv_* calls: `parts` is "set" (one body computing the
    whole), "reset" (body, reset, update) or "first" (body at the first step, then update)."""
    a = sl.placeholder((l,), name="a")
    b = sl.placeholder((m, l), name="b")
    k = sl.reduce_axis((0, l), name="k")
    c = sl.compute((m,), lambda i: sl.sum(a[k] * b[i, k], axis=k), name="c")
    binds = {
        a: sl.decl_buffer(a.shape, a.dtype, name="A", strides=[1]),
        b: sl.decl_buffer(b.shape, b.dtype, name="B", strides=[sl.var("s1"), 1]),
        c: sl.decl_buffer(c.shape, c.dtype, name="C", strides=[1]),
    }

    def body(ins, outs):
        aa, bb = ins
        cc = outs[0]
        args = (cc.access_ptr("w"), aa.access_ptr("r"), bb.access_ptr("r"), m, l, bb.strides[0])
        whole = sl.call_extern("int32", "gemv_set", *args)
        update = sl.call_extern("int32", "gemv_update", *args)
        if parts == "set":
            return whole
        if parts == "reset":
            return update, sl.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m), update
        return whole, None, update

    return sl.decl_tensor_intrin(c.op, body, name="gemv", binds=binds)


def _run(s, args, shapes):
    kernel = sl.build(s, args)
    inputs = [RNG.uniform(-1, 1, shape).astype("float32") for shape in shapes[:-1]]
    out = np.full(shapes[-1], np.nan, "float32")
    kernel(*inputs, out)
    return inputs, out


def test_the_whole_reduction_in_one_call_per_tile():
    a, b, c = _product()
    s = sl.create_schedule(c)
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    jo, ji = s[c].split(j, factor=16)
    s[c].reorder(i, jo, ji, k)
    s[c].tensorize(ji, _gemv(16, L))
    s[c].pragma(i, "import_llvm", IR)
    text = str(sl.lower(s, [a, b, c]))
    assert "gemv_set(&C[i, 16 * j.outer], &A[i, 0], &B[16 * j.outer, 0], 16, 32, 32)" in text
    assert "range(0, 16)" not in text and "range(0, 32)" not in text
    (x, y), out = _run(s, [a, b, c], [(N, L), (M, L), (N, M)])
    np.testing.assert_allclose(out, x @ y.T, rtol=1e-5, atol=1e-5)


def _split_reduction(parts):
    """C's rows in parallel, 16 columns and 8 terms of the sum a tile, the sum's steps
    outside the tile."""
    a, b, c = _product()
    s = sl.create_schedule(c)
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    jo, ji = s[c].split(j, factor=16)
    ko, ki = s[c].split(k, factor=8)
    s[c].reorder(i, jo, ko, ji, ki)
    s[c].parallel(i)
    s[c].tensorize(ji, _gemv(16, 8, parts))
    s[c].pragma(i, "import_llvm", IR)
    return s, a, b, c


@pytest.mark.parametrize("parts", ["reset", "first"])
def test_a_reduction_split_around_the_tile(parts):
    s, a, b, c = _split_reduction(parts)
    text = str(sl.lower(s, [a, b, c]))
    if parts == "reset":
        assert "gemv_reset(&C[i, 16 * j.outer], 16)" in text
    else:
        assert "if 8 * k.outer == 0:" in text and "gemv_set(" in text
    assert "gemv_update(&C[i, 16 * j.outer], &A[i, 8 * k.outer], &B[16 * j.outer, 8" in text
    (x, y), out = _run(s, [a, b, c], [(N, L), (M, L), (N, M)])
    np.testing.assert_allclose(out, x @ y.T, rtol=1e-5, atol=1e-5)


def test_an_elementwise_intrinsic_and_a_saved_kernel(tmp_path):
    n = 40
    x = sl.placeholder((n,), name="X")
    y = sl.placeholder((n,), name="Y")
    z = sl.compute((n,), lambda i: x[i] + y[i], name="Z")
    a = sl.placeholder((8,), name="a")
    b = sl.placeholder((8,), name="b")
    c = sl.compute((8,), lambda i: a[i] + b[i], name="c")

    def body(ins, outs):
        return sl.call_extern(
            "int32", "vadd", outs[0].access_ptr("w"), ins[0].access_ptr("r"),
            ins[1].access_ptr("r"), 8,
        )  # fmt: skip

    s = sl.create_schedule(z)
    outer, inner = s[z].split(z.op.axis[0], factor=8)
    s[z].tensorize(inner, sl.decl_tensor_intrin(c.op, body))
    s[z].pragma(outer, "import_llvm", IR)
    kernel = sl.build(s, [x, y, z])
    kernel.export(tmp_path / "vadd.sl")
    loaded = sl.load(tmp_path / "vadd.sl")
    p, q = RNG.uniform(-1, 1, n).astype("float32"), RNG.uniform(-1, 1, n).astype("float32")
    for k in (kernel, loaded):
        out = np.full(n, np.nan, "float32")
        k(p, q, out)
        np.testing.assert_array_equal(out, p + q)


def _tensorized(**change):
    a, b, c = _product()
    s = sl.create_schedule(c)
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    jo, ji = s[c].split(j, factor=change.get("factor", 16))
    s[c].reorder(i, jo, ji, k)
    s[c].tensorize(ji, change.get("intrin") or _gemv(16, L))
    if change.get("imports", True):
        s[c].pragma(i, "import_llvm", change.get("ir", IR))
    return s, [a, b, c]


def test_loops_that_do_not_match_the_intrinsic_are_refused():
    s, args = _tensorized(factor=8)
    with pytest.raises(TensorizeError, match="the loop 'j.inner' has extent 8, the intrinsic"):
        sl.lower(s, args)


def test_another_expression_is_refused():
    l = 32  # noqa: E741 - the intrinsic's reduction length, as TE names it
    a = sl.placeholder((l,), name="a")
    b = sl.placeholder((16, l), name="b")
    k = sl.reduce_axis((0, l), name="k")
    c = sl.compute((16,), lambda i: sl.sum(a[k] + b[i, k], axis=k), name="c")
    intrin = sl.decl_tensor_intrin(
        c.op, lambda ins, outs: sl.call_extern("int32", "gemv_set", outs[0].access_ptr("w"))
    )
    s, args = _tensorized(intrin=intrin)
    with pytest.raises(TensorizeError, match="the expressions must be the same, node for node"):
        sl.lower(s, args)


def test_a_transposed_access_is_refused():
    l = 32  # noqa: E741
    a = sl.placeholder((l,), name="a")
    b = sl.placeholder((l, 16), name="b")
    k = sl.reduce_axis((0, l), name="k")
    c = sl.compute((16,), lambda i: sl.sum(a[k] * b[k, i], axis=k), name="c")
    intrin = sl.decl_tensor_intrin(
        c.op, lambda ins, outs: sl.call_extern("int32", "gemv_set", outs[0].access_ptr("w"))
    )
    s, args = _tensorized(intrin=intrin)
    with pytest.raises(TensorizeError, match=r"runs along its tensor's dimensions \(1, 0\)"):
        sl.lower(s, args)


def test_a_tile_cut_by_the_edge_is_refused():
    a = sl.placeholder((N, L), name="A")
    b = sl.placeholder((40, L), name="B")
    k = sl.reduce_axis((0, L), name="k")
    c = sl.compute((N, 40), lambda i, j: sl.sum(a[i, k] * b[j, k], axis=k), name="C")
    s = sl.create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=16)
    s[c].reorder(i, jo, ji, k)
    s[c].tensorize(ji, _gemv(16, L))
    with pytest.raises(TensorizeError, match="the function computes whole tiles"):
        sl.lower(s, [a, b, c])


def test_reduce_loops_outside_need_an_update():
    s, a, b, c = _split_reduction("set")
    with pytest.raises(TensorizeError, match="the intrinsic needs an update"):
        sl.lower(s, [a, b, c])


def test_a_tuple_is_body_reset_and_update_and_a_list_one_body():
    l = 32  # noqa: E741
    a = sl.placeholder((l,), name="a")
    b = sl.placeholder((16, l), name="b")
    k = sl.reduce_axis((0, l), name="k")
    c = sl.compute((16,), lambda i: sl.sum(a[k] * b[i, k], axis=k), name="c")
    call = sl.call_extern("int32", "gemv_set")
    listed = sl.decl_tensor_intrin(c.op, lambda ins, outs: [call, call, call])
    assert len(listed.body) == 3 and not listed.reset
    split = sl.decl_tensor_intrin(c.op, lambda ins, outs: (call, None, [call, call]))
    assert len(split.body) == 1 and not split.reset and len(split.update) == 2
    with pytest.raises(sl.ScheduleError, match="a tuple is \\(body, reset, update\\)"):
        sl.decl_tensor_intrin(c.op, lambda ins, outs: (call, call))


def test_two_tiles_of_one_tensor_for_one_buffer_are_refused():
    x = sl.placeholder((16, 8), name="X")
    k = sl.reduce_axis((0, 8), name="k")
    c = sl.compute((16, 16), lambda i, j: sl.sum(x[i, k] * x[j, k], axis=k), name="C")
    a = sl.placeholder((4, 8), name="a")
    kk = sl.reduce_axis((0, 8), name="k")
    t = sl.compute((4, 4), lambda i, j: sl.sum(a[i, kk] * a[j, kk], axis=kk), name="t")
    intrin = sl.decl_tensor_intrin(
        t.op,
        lambda ins, outs: sl.call_extern(
            "int32", "syrk", outs[0].access_ptr("w"), ins[0].access_ptr("r")
        ),
    )
    s = sl.create_schedule(c)
    i, j = c.op.axis
    io, ii = s[c].split(i, factor=4)
    jo, ji = s[c].split(j, factor=4)
    s[c].reorder(io, jo, ii, ji, k)
    s[c].tensorize(ii, intrin)
    with pytest.raises(TensorizeError, match="'a' is read twice, as X\\[4 \\* i.outer, 0\\]"):
        sl.lower(s, [x, c])


def test_a_stride_variable_two_buffers_give_different_strides_is_refused():
    x = sl.placeholder((16, 8), name="X")
    y = sl.placeholder((16, 24), name="Y")
    z = sl.compute((16, 8), lambda i, j: x[i, j] + y[i, j], name="Z")
    a, b = sl.placeholder((4, 8), name="a"), sl.placeholder((4, 8), name="b")
    c = sl.compute((4, 8), lambda i, j: a[i, j] + b[i, j], name="c")
    stride = sl.var("s")
    binds = {t: sl.decl_buffer(t.shape, t.dtype, strides=[stride, 1]) for t in (a, b)}
    intrin = sl.decl_tensor_intrin(
        c.op,
        lambda ins, outs: sl.call_extern("int32", "add", outs[0].access_ptr("w"), stride),
        binds=binds,
    )
    s = sl.create_schedule(z)
    io, ii = s[z].split(z.op.axis[0], factor=4)
    s[z].tensorize(ii, intrin)
    with pytest.raises(
        TensorizeError,
        match="tensorize\\(i.inner, intrin c\\) at .*: the stride .s. is 8 in one buffer and 24",
    ):
        sl.lower(s, [x, y, z])


def test_tensorizing_again_replaces_the_earlier_tensorize():
    s, args = _tensorized(factor=16)
    c = args[2]
    s[c].tensorize(s[c].leaves[2], sl.intrin.mma_sync())  # a tensor-core tile, then
    s[c].tensorize(s[c].leaves[2], _gemv(16, L))  # the CPU's function instead
    (x, y), out = _run(s, args, [(N, L), (M, L), (N, M)])
    np.testing.assert_allclose(out, x @ y.T, rtol=1e-5, atol=1e-5)


def test_functions_defined_nowhere_or_in_bad_ir_are_named():
    s, args = _tensorized(imports=False)
    with pytest.raises(LoweringError, match="the C function 'gemv_set' .* is defined nowhere"):
        sl.build(s, args)
    s, args = _tensorized(ir="define i32 @gemv_set( {")
    with pytest.raises(LoweringError, match="'import_llvm' does not parse"):
        sl.build(s, args)


def test_a_declared_intrinsic_is_refused_on_the_gpu():
    s, args = _tensorized()
    with pytest.raises(LoweringError, match="calls C functions, which run on the CPU"):
        sl.build(s, args, target="cuda")
