"""TE's warp-matrix intrinsics of any of its tile shapes (``(n, m, l)``: A n x l, B l x m, the
accumulator n x m), declared as TE's tensor-core tests declare them: 16 x 16 x 16 and the
taller 32 x 8 x 16 (m32n8k16) map onto schedlang's shipped intrinsics, and TE's batched GEMM
of 32 x 8 tiles runs (simulated without a GPU) as numpy computes it."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.tvm import te


def _builtin(name: str, *args):
    ib = tvm.tir.ir_builder.create()
    ib.emit(tvm.tir.call_intrin("handle", name, *args))
    return ib.get()


def wmma_load(shape, scope):
    n, m, l = shape
    rows, cols = (n, l) if scope == "wmma.matrix_a" else (l, m)
    a = te.placeholder((rows, cols), name="A", dtype="float16")
    c = te.compute((rows, cols), lambda i, j: a[i, j], name="C")
    binds = {
        a: tvm.tir.decl_buffer(a.shape, a.dtype, scope="shared", offset_factor=rows * cols),
        c: tvm.tir.decl_buffer(c.shape, c.dtype, scope=scope, offset_factor=rows * cols),
    }

    def body(ins, outs):
        return _builtin(
            "tir.tvm_load_matrix_sync", outs[0].data, n, m, l,
            outs[0].elem_offset // (rows * cols), ins[0].access_ptr("r"), cols, "row_major",
        )  # fmt: skip

    return te.decl_tensor_intrin(c.op, body, binds=binds)


def wmma_gemm(shape):
    n, m, l = shape
    a = te.placeholder((n, l), name="A", dtype="float16")
    b = te.placeholder((l, m), name="B", dtype="float16")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute(
        (n, m),
        lambda i, j: te.sum(a[i, k].astype("float") * b[k, j].astype("float"), axis=k),
        name="C",
    )
    scopes = {a: "wmma.matrix_a", b: "wmma.matrix_b", c: "wmma.accumulator"}
    binds = {t: tvm.tir.decl_buffer(t.shape, t.dtype, scope=v) for t, v in scopes.items()}

    def body(ins, outs):
        (fa, fb), (fc,) = ins, outs
        update = _builtin("tir.tvm_mma_sync", fc.data, 0, fa.data, 0, fb.data, 0, fc.data, 0)
        reset = _builtin("tir.tvm_fill_fragment", fc.data, n, m, l, 0, 0.0)
        return update, reset, update

    return te.decl_tensor_intrin(c.op, body, binds=binds)


def wmma_store(shape):
    n, m, l = shape
    a = te.placeholder((n, m), name="A", dtype="float32")
    c = te.compute((n, m), lambda i, j: a[i, j], name="C")
    binds = {a: tvm.tir.decl_buffer(a.shape, a.dtype, scope="wmma.accumulator")}

    def body(ins, outs):
        return _builtin(
            "tir.tvm_store_matrix_sync", ins[0].data, n, m, l, 0, outs[0].access_ptr("w"), m,
            "row_major",
        )  # fmt: skip

    return te.decl_tensor_intrin(c.op, body, binds=binds)


def test_te_tile_shapes_are_the_shipped_intrinsics():
    tall = (32, 8, 16)
    assert wmma_load(tall, "wmma.matrix_a") == sl.intrin.load_matrix("wmma.matrix_a", m=32)
    assert wmma_load(tall, "wmma.matrix_b") == sl.intrin.load_matrix("wmma.matrix_b", n=8)
    assert wmma_gemm(tall) == sl.intrin.mma_sync(n=8, m=32)
    assert wmma_store(tall) == sl.intrin.store_matrix(n=8, m=32)
    wide = (8, 32, 16)
    assert wmma_load(wide, "wmma.matrix_a") == sl.intrin.load_matrix("wmma.matrix_a", m=8)
    assert wmma_load(wide, "wmma.matrix_b") == sl.intrin.load_matrix("wmma.matrix_b", n=32)
    assert wmma_gemm(wide) == sl.intrin.mma_sync(n=32, m=8)
    assert wmma_store(wide) == sl.intrin.store_matrix(n=32, m=8)
    assert wmma_gemm((16, 16, 16)) == sl.intrin.mma_sync()
    with pytest.raises(tvm.TVMError, match=r"'C': mma_sync: m=32 is the m32n8k16 tile: n=8"):
        wmma_gemm((32, 16, 16))
    with pytest.raises(tvm.TVMError, match=r"the compute's shape is \(64, 8\); the warp-matrix"):
        wmma_store((64, 8, 16))


def batch_matmul(batch, n):
    """TE's test_tensor_core_batch_matmal, of `batch` products of n x n matrices (n a multiple
    of 32), with fewer warps a block."""
    nn, mm, ll = n // 32, n // 8, n // 16
    a = te.placeholder((batch, nn, ll, 32, 16), name="A", dtype="float16")
    b = te.placeholder((batch, ll, mm, 16, 8), name="B", dtype="float16")
    k1 = te.reduce_axis((0, ll), name="k1")
    k2 = te.reduce_axis((0, 16), name="k2")
    c = te.compute(
        (batch, nn, mm, 32, 8),
        lambda z, i, j, ii, jj: te.sum(
            a[z, i, k1, ii, k2].astype("float") * b[z, k1, j, k2, jj].astype("float"),
            axis=[k1, k2],
        ),
        name="Fragment_C",
    )
    s = te.create_schedule(c.op)
    thread_y, thread_z = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.z")
    a_shared, b_shared = s.cache_read(a, "shared", [c]), s.cache_read(b, "shared", [c])
    a_frag = s.cache_read(a_shared, "wmma.matrix_a", [c])
    b_frag = s.cache_read(b_shared, "wmma.matrix_b", [c])
    c_frag = s.cache_write(c, "wmma.accumulator")
    z, i, j, kernel_i, kernel_j = s[c].op.axis
    block_i, i = s[c].split(i, factor=2)
    j, jj = s[c].split(j, factor=2)
    block_j, j = s[c].split(j, factor=2)
    s[c].reorder(block_i, block_j, i, j, jj, kernel_i, kernel_j)
    s[c].bind(z, te.thread_axis("blockIdx.z"))
    s[c].bind(block_i, te.thread_axis("blockIdx.x"))
    s[c].bind(block_j, te.thread_axis("blockIdx.y"))
    s[c].bind(i, thread_y)
    s[c].bind(j, thread_z)
    s[c_frag].compute_at(s[c], j)
    _, warp_i, warp_j, _i, _j = s[c_frag].op.axis
    k, _k = c_frag.op.reduce_axis
    ko, ki = s[c_frag].split(k, factor=2)
    s[c_frag].reorder(ko, ki, warp_i, warp_j, _i, _j, _k)
    s[a_frag].compute_at(s[c_frag], ki)
    s[b_frag].compute_at(s[c_frag], ki)
    for shared in (a_shared, b_shared):
        s[shared].compute_at(s[c_frag], ko)
        _, xo, yo, xi, yi = shared.op.axis
        tx, xo = s[shared].split(xo, nparts=2)
        ty, yo = s[shared].split(yo, nparts=2)
        to, _ = s[shared].split(s[shared].fuse(xi, yi), nparts=32)
        s[shared].bind(tx, thread_y)
        s[shared].bind(ty, thread_z)
        s[shared].bind(to, te.thread_axis("threadIdx.x"))
    tall = (32, 8, 16)
    s[a_frag].tensorize(a_frag.op.axis[-2], wmma_load(tall, "wmma.matrix_a"))
    s[b_frag].tensorize(b_frag.op.axis[-2], wmma_load(tall, "wmma.matrix_b"))
    s[c].tensorize(kernel_i, wmma_store(tall))
    s[c_frag].tensorize(_i, wmma_gemm(tall))
    return s, (a, b, c)


@pytest.mark.parametrize(("batch", "n"), [(3, 64), (1, 96)])
def test_te_batched_gemm_of_32_by_8_tiles_matches_numpy(batch, n):
    s, (a, b, c) = batch_matmul(batch, n)
    func = tvm.build(s, [a, b, c], "cuda")
    assert "mma.sync.aligned.m16n8k16" in func.kernel.ptx
    rng = np.random.default_rng(batch + n)
    a_np = rng.uniform(-1.0, 1.0, [int(d) for d in a.shape]).astype(np.float16)
    b_np = rng.uniform(-1.0, 1.0, [int(d) for d in b.shape]).astype(np.float16)
    dev = tvm.cpu(0)
    out = tvm.nd.array(np.full([int(d) for d in c.shape], np.nan, np.float32), dev)
    func.simulate(tvm.nd.array(a_np, dev), tvm.nd.array(b_np, dev), out)
    got = out.numpy().transpose((0, 1, 3, 2, 4)).reshape(batch, n, n)
    a_mat = a_np.transpose((0, 1, 3, 2, 4)).reshape(batch, n, n).astype(np.float64)
    b_mat = b_np.transpose((0, 1, 3, 2, 4)).reshape(batch, n, n).astype(np.float64)
    np.testing.assert_allclose(got, a_mat @ b_mat, rtol=1e-5, atol=1e-5 * n)
