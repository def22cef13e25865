"""Stages computed on a warpgroup's accumulator element by element (`loopir.gpu.fragment_lanes`):
an epilogue on a GEMM's accumulator, and a row softmax of a GEMM tile, whose row maximum and sum
are combined by each thread over its own columns and then by the four lanes of a quad.

Simulated on the CPU with the warpgroup's layout against the numpy reference of the plain
algorithm (random inputs, outputs poisoned with NaN), assembled by ptxas, run on a Hopper GPU
where there is one; and the schedules that are refused, each with its reason.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from examples.gpu_gemm_wgmma import stage_tile
from schedlang.schedule.errors import TensorizeError

from .ptxas import assemble


def _product(m, n, k):
    a = sl.placeholder((m, k), "float16", name="A")
    b = sl.placeholder((k, n), "float16", name="B")
    r = sl.reduce_axis((0, k), name="r")
    p = sl.compute(
        (m, n),
        lambda i, j: sl.sum(a[i, r].astype("float32") * b[r, j].astype("float32"), axis=r),
        name="P",
    )
    return a, b, p


def epilogue(m, n, k=64):
    """``E = relu(A B * 0.5 + bias)`` in float16: the scale, bias and relu on the accumulator."""
    a, b, p = _product(m, n, k)
    bias = sl.placeholder((n,), "float32", name="bias")
    d = sl.compute((m, n), lambda i, j: sl.max(p[i, j] * 0.5 + bias[j], 0.0), name="D")
    e = sl.compute((m, n), lambda i, j: d[i, j].astype("float16"), name="E")
    return (a, b, bias, e), (p, d), e


def softmax_rows(m, n, k=64):
    """``E = softmax(A B)`` along the rows, in float16, the rows no longer than a tile's."""
    a, b, p = _product(m, n, k)
    j1, j2 = sl.reduce_axis((0, n), name="j1"), sl.reduce_axis((0, n), name="j2")
    mx = sl.compute((m,), lambda i: sl.max(p[i, j1], axis=j1), name="Mx")
    x = sl.compute((m, n), lambda i, j: sl.exp(p[i, j] - mx[i]), name="X")
    sm = sl.compute((m,), lambda i: sl.sum(x[i, j2], axis=j2), name="Sm")
    d = sl.compute((m, n), lambda i, j: x[i, j] / sm[i], name="D")
    e = sl.compute((m, n), lambda i, j: d[i, j].astype("float16"), name="E")
    return (a, b, e), (p, mx, x, sm, d), e


def attention_tile(rows, keys, d=64):
    """Attention over at most a tile of keys, FlashAttention's way: ``S = Q K^T``, the rows'
    maximum and sum of ``X = exp((S - max) / 8)``, ``P = X`` in float16 as the A operand of
    ``O = P V``, ``Out = O / sum``. Both products on the tensor cores, P never in memory."""
    q = sl.placeholder((rows, d), "float16", name="Q")
    k = sl.placeholder((keys, d), "float16", name="K")
    v = sl.placeholder((keys, d), "float16", name="V")
    e = sl.reduce_axis((0, d), name="e")
    s_ = sl.compute(
        (rows, keys),
        lambda i, j: sl.sum(q[i, e].astype("float32") * k[j, e].astype("float32"), axis=e),
        name="S",
    )
    j1, j2, jo = (sl.reduce_axis((0, keys), name=n) for n in ("j1", "j2", "jo"))
    mx = sl.compute((rows,), lambda i: sl.max(s_[i, j1], axis=j1), name="Mx")
    x = sl.compute((rows, keys), lambda i, j: sl.exp((s_[i, j] - mx[i]) * 0.125), name="X")
    sm = sl.compute((rows,), lambda i: sl.sum(x[i, j2], axis=j2), name="Sm")
    p = sl.compute((rows, keys), lambda i, j: x[i, j].astype("float16"), name="P")
    o = sl.compute(
        (rows, d),
        lambda i, c: sl.sum(p[i, jo].astype("float32") * v[jo, c].astype("float32"), axis=jo),
        name="O",
    )
    scaled = sl.compute((rows, d), lambda i, c: o[i, c] / sm[i], name="D")
    out = sl.compute((rows, d), lambda i, c: scaled[i, c].astype("float16"), name="Out")
    return (q, k, v, out), (s_, mx, x, sm, p, o, scaled), out


def attention_schedule(out, fragments):
    """A warpgroup per 64 query rows, two per block; Q, K and V staged in shared memory whole;
    both products by wgmma, the second with its A operand, P, in registers."""
    s = sl.create_schedule(out.op)
    scores, product = fragments[0], fragments[-2]
    q, k = scores.op.input_tensors
    v = product.op.input_tensors[1]
    staged = [s.cache_read(q, "shared", [scores]), s.cache_read(k, "shared", [scores])]
    staged.append(s.cache_read(v, "shared", [product]))
    for t in fragments:
        s[t].set_scope("wgmma.accumulator")
    i, c = out.op.axis
    bi, i = s[out].split(i, factor=128)
    gi, i = s[out].split(i, factor=64)
    s[out].reorder(bi, gi, i, c)
    s[out].bind(bi, sl.thread_axis("blockIdx.x"))
    s[out].bind(gi, sl.thread_axis("threadIdx.z"))
    s[out].tensorize(i, sl.intrin.store_matrix(n=int(out.shape[1]), m=64))
    for t in reversed(fragments):
        s[t].compute_at(s[out], gi)
    for t in (scores, product):
        ko, ki = s[t].split(s[t].op.reduce_axis[0], factor=16)
        s[t].reorder(ko, *s[t].op.axis, ki)
        s[t].tensorize(s[t].op.axis[0], sl.intrin.wgmma(n=int(t.shape[1])))
    for t in staged:
        stage_tile(s, t, s[out], gi, 2, 1)
    return s


def schedule(out, fragments, block_cols=64, touch=None):
    """Blocks of 128 x `block_cols` outputs, a warpgroup per 64 rows; the product by wgmma into
    the first of `fragments`, the others computed element by element in the same scope, all at
    the warpgroup's loop, and the last stored by ``store_matrix``. `touch(s)` changes one
    thing, for the refusals."""
    s = sl.create_schedule(out.op)
    product = fragments[0]
    a, b = product.op.input_tensors
    staged = [s.cache_read(t, "shared", [product]) for t in (a, b)]
    for t in fragments:
        s[t].set_scope("wgmma.accumulator")
    i, j = out.op.axis
    bi, i = s[out].split(i, factor=128)
    bj, j = s[out].split(j, factor=block_cols)
    gi, i = s[out].split(i, factor=64)
    s[out].reorder(bi, bj, gi, i, j)
    s[out].bind(bi, sl.thread_axis("blockIdx.y"))
    s[out].bind(bj, sl.thread_axis("blockIdx.x"))
    s[out].bind(gi, sl.thread_axis("threadIdx.z"))
    s[out].tensorize(i, sl.intrin.store_matrix(n=block_cols, m=64))
    for t in reversed(fragments):
        s[t].compute_at(s[out], gi)
    ko, ki = s[product].split(s[product].op.reduce_axis[0], factor=64)
    kio, ki = s[product].split(ki, factor=16)
    s[product].reorder(ko, kio, *s[product].op.axis, ki)
    s[product].tensorize(s[product].op.axis[0], sl.intrin.wgmma(n=block_cols))
    for t in staged:
        stage_tile(s, t, s[product], ko, 2, 1)
    if touch is not None:
        touch(s)
    return s


def _inputs(args, seed=0):
    rng = np.random.default_rng(seed)
    values = []
    for t in args[:-1]:
        shape = tuple(int(n) for n in t.shape)
        values.append(rng.uniform(-2, 2, shape).astype(t.dtype))
    out = args[-1]
    values.append(np.full(tuple(int(n) for n in out.shape), np.nan, out.dtype))
    return values


def _check(values, args, out):
    want = sl.reference(out, dict(zip(args[:-1], values[:-1]))).astype(np.float32)
    got = values[-1].astype(np.float32)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


CASES = [
    (epilogue, (128, 64), 64),
    (epilogue, (200, 136), 64),  # tiles cut along the rows and the columns
    (softmax_rows, (128, 64), 64),
    (softmax_rows, (70, 64), 64),  # a warpgroup with no rows, one with six
    (softmax_rows, (200, 128), 128),
]


@pytest.mark.parametrize(("algorithm", "shape", "cols"), CASES)
def test_simulated_with_the_warpgroup_layout(algorithm, shape, cols):
    args, fragments, out = algorithm(*shape)
    kernel = sl.build(schedule(out, fragments, cols), list(args), target="cuda")
    values = _inputs(args)
    kernel.simulate(*values)
    _check(values, args, out)


ATTENTION = [(128, 64), (200, 64), (70, 48)]


@pytest.mark.parametrize(("rows", "keys"), ATTENTION)
def test_attention_of_a_tile_simulated(rows, keys):
    args, fragments, out = attention_tile(rows, keys)
    kernel = sl.build(attention_schedule(out, fragments), list(args), target="cuda")
    values = _inputs(args)
    kernel.simulate(*values)
    _check(values, args, out)


def test_a_product_takes_its_a_operand_from_registers():
    args, fragments, out = attention_tile(128, 64)
    kernel = sl.build(attention_schedule(out, fragments), list(args), target="cuda")
    ptx = kernel.ptx
    from_registers = re.findall(r"wgmma\.mma_async[^;]*\{%r\d+, %r\d+, %r\d+, %r\d+\}", ptx)
    assert len(from_registers) == 4  # P V: 64 keys, 16 a product
    report = assemble(ptx)
    assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log
    assert "serialized" not in report.log


def test_each_thread_computes_its_own_slots_and_the_quads_combine_the_rows():
    args, fragments, out = softmax_rows(128, 64)
    kernel = sl.build(schedule(out, fragments), list(args), target="cuda")
    text = str(kernel.lowered)
    assert "X.slot[" in text and "Mx.slot[" in text
    assert "thread_allreduce(max(Mx.part0[0])) over groups of 4 lanes" in text
    assert "thread_allreduce(sum(Sm.part1[0])) over groups of 4 lanes" in text
    ptx = kernel.ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k16" in ptx and "shfl.sync" in ptx
    report = assemble(ptx)
    assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log
    assert "serialized" not in report.log


def test_an_epilogue_reads_other_tensors_at_the_threads_elements():
    args, fragments, out = epilogue(200, 136)
    kernel = sl.build(schedule(out, fragments), list(args), target="cuda")
    text = str(kernel.lowered)
    # the column of the thread's slot, clamped into bias: the edge's guards are gone
    # (`loopir.gpu.register_guards`), and a column past 136 reads the last one
    assert "bias[max(min(64 * j.outer + D.0.lane % 4 * 2, 135), 0)]" in text
    assert not [line for line in text.splitlines() if line.strip().startswith("if ")]
    report = assemble(kernel.ptx)
    assert report.stack_bytes == 0, report.log


def _refused(algorithm, touch, match, cols=64):
    args, fragments, out = algorithm(128, cols)
    with pytest.raises(TensorizeError, match=match):
        sl.build(schedule(out, fragments, cols, touch=touch), list(args), target="cuda")


def test_the_loops_of_an_element_stage_are_the_layout():
    def split(s):
        stage = [t for t in s.stages if t.name == "D"][0]
        stage.split(stage.op.axis[1], factor=8)

    _refused(epilogue, split, r"'D'.*loops are the layout .* leave them as they are")


def test_a_fragment_read_at_another_threads_element_is_refused():
    a, b, p = _product(128, 64, 64)
    d = sl.compute((128, 64), lambda i, j: p[i, 63 - j] * 2.0, name="D")
    e = sl.compute((128, 64), lambda i, j: d[i, j].astype("float16"), name="E")
    with pytest.raises(TensorizeError, match=r"'D'.*reads P\[i, 63 - j\].*another thread holds"):
        sl.build(schedule(e, (p, d)), [a, b, e], target="cuda")


def test_a_row_combined_over_another_axis_is_refused():
    a, b, p = _product(128, 64, 64)
    r = sl.reduce_axis((0, 64), name="c")
    col = sl.compute((64,), lambda j: sl.sum(p[r, j], axis=r), name="Col")
    e = sl.compute((128, 64), lambda i, j: (p[i, j] - col[j]).astype("float16"), name="E")
    with pytest.raises(TensorizeError, match=r"'Col'.*reads P\[c, j\].*another thread holds"):
        sl.build(schedule(e, (p, col)), [a, b, e], target="cuda")


def test_a_memory_stage_reading_a_fragment_element_by_element_is_refused():
    args, (p, d), e = epilogue(128, 64)

    def local(s):
        s[d].set_scope("local")

    with pytest.raises(TensorizeError, match=r"'D': it reads the fragment 'P'.*set_scope"):
        sl.build(schedule(e, (p, d), touch=local), list(args), target="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize(("rows", "keys"), ATTENTION)
def test_attention_of_a_tile_on_the_gpu(rows, keys):
    args, fragments, out = attention_tile(rows, keys)
    kernel = sl.build(attention_schedule(out, fragments), list(args), target="cuda")
    values = _inputs(args, seed=2)
    kernel(*values)
    _check(values, args, out)


@pytest.mark.gpu
@pytest.mark.parametrize(("algorithm", "shape", "cols"), CASES)
def test_on_the_gpu(algorithm, shape, cols):
    args, fragments, out = algorithm(*shape)
    kernel = sl.build(schedule(out, fragments, cols), list(args), target="cuda")
    values = _inputs(args, seed=1)
    kernel(*values)
    _check(values, args, out)
