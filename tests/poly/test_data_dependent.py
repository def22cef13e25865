"""Reads at data-dependent indices: gathers, embedding lookups, indices computed through float
math or a product of variables.

The index is clamped into its tensor (TOPI's ``take`` mode "clip") by the reference, the
loop-IR interpreter and both code generators; the read's footprint along that dimension is the
tensor's whole extent, while its affine dimensions stay exact. Every schedule is checked
against the reference with indices past both ends of the tensor and NaN-poisoned outputs,
through the interpreter and the CPU JIT; the GPU schedules also as PTX (ptxas) and on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.core.nodes import Allocate
from schedlang.loopir.core.visit import walk_stmt
from schedlang.schedule.errors import LegalityError
from tests.cuda.ptxas import assemble
from tests.schedule.test_gpu_schedules import bind
from tests.schedule.util import check, random_inputs

N, M, K = 13, 7, 29  # rows read, columns, rows of the table: odd and unrelated


def _indices(shape, extent: int, dtype: str = "int32", seed: int = 5) -> np.ndarray:
    """Random indices from -5 to extent + 4: some before and some past the tensor."""
    gen = np.random.default_rng(seed)
    return gen.integers(-5, extent + 5, size=shape).astype(dtype)


def _gather(dtype: str = "int32", n=N, m=M, k=K):
    data = sl.placeholder((k, m), name="data")
    idx = sl.placeholder((n, m), dtype=dtype, name="idx")
    out = sl.compute((n, m), lambda i, j: data[idx[i, j], j] * 2.0, name="out")
    return data, idx, out


def _bag(dtype: str = "int32", width: int = 5):
    """An embedding bag: each row sums `width` rows of the table."""
    table = sl.placeholder((K, M), name="table")
    idx = sl.placeholder((N, width), dtype=dtype, name="idx")
    j = sl.reduce_axis((0, width), name="j")
    out = sl.compute((N, M), lambda i, c: sl.sum(table[idx[i, j], c], axis=j), name="out")
    return table, idx, out


def test_the_reference_reads_the_clamped_element():
    data, idx, out = _gather()
    values = random_inputs([data], {})
    ix = _indices((N, M), K)
    assert (ix < 0).any() and (ix >= K).any()
    want = values[data][np.clip(ix, 0, K - 1), np.arange(M)] * 2.0
    np.testing.assert_array_equal(sl.evaluate(out, {data: values[data], idx: ix}), want)


def _tiled(s, data, idx, out):
    io, jo, ii, ji = s[out].tile(out.op.axis[0], out.op.axis[1], 4, 3)
    s[out].parallel(io)
    s[out].vectorize(ji)


def _staged(tensor_of):
    def schedule(s, data, idx, out):
        io, _ = s[out].split(out.op.axis[0], factor=4)
        staged = s.cache_read(tensor_of(data, idx), "local", [out])
        s[staged].compute_at(s[out], io)

    return schedule


GATHER_SCHEDULES = {
    "default": lambda s, data, idx, out: None,
    "tiled_parallel_vectorized": _tiled,
    "reordered": lambda s, data, idx, out: s[out].reorder(out.op.axis[1], out.op.axis[0]),
    "data_staged": _staged(lambda data, idx: data),
    "index_staged": _staged(lambda data, idx: idx),
}


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("name", sorted(GATHER_SCHEDULES))
def test_a_gather_matches_the_reference(name, dtype):
    data, idx, out = _gather(dtype)
    s = sl.create_schedule(out)
    GATHER_SCHEDULES[name](s, data, idx, out)
    func = check(s, [data, idx], [out], given={idx: _indices((N, M), K, dtype)})
    assert "max(min(" in str(func)


def test_a_gather_over_symbolic_sizes():
    n, m, k = sl.var("n"), sl.var("m"), sl.var("k")
    data, idx, out = _gather("int32", n, m, k)
    s = sl.create_schedule(out)
    _tiled(s, data, idx, out)
    sizes = {"n": 11, "m": 9, "k": 6}
    check(s, [data, idx], [out], sizes, given={idx: _indices((11, 9), 6)})


@pytest.mark.parametrize("inline", [False, True])
def test_an_index_computed_by_another_stage(inline):
    data = sl.placeholder((K, M), name="data")
    raw = sl.placeholder((N,), dtype="int32", name="raw")
    idx = sl.compute((N,), lambda i: raw[i] * 3 - 4, name="idx")
    out = sl.compute((N, M), lambda i, j: data[idx[i], j], name="out")
    s = sl.create_schedule(out)
    if inline:
        s[idx].compute_inline()
    else:
        io, _ = s[out].split(out.op.axis[0], factor=4)
        s[idx].compute_at(s[out], io)
    check(s, [data, raw], [out], given={raw: _indices((N,), 12)})


def test_a_producer_of_the_data_computed_at_the_reader_covers_the_whole_extent():
    """Along the data-dependent dimension the reader may need any row, so the producer computes
    all of them at each point it is computed at; along the affine one, only the column read."""
    data, idx, _ = _gather()
    plus = sl.compute((K, M), lambda a, b: data[a, b] + 1.0, name="plus")
    out = sl.compute((N, M), lambda i, j: plus[idx[i, j], j], name="out")
    s = sl.create_schedule(out)
    s[plus].compute_at(s[out], out.op.axis[1])
    func = check(s, [data, idx], [out], given={idx: _indices((N, M), K)})
    (alloc,) = [a for a in walk_stmt(func.body) if isinstance(a, Allocate)]
    assert tuple(int(n) for n in alloc.buffer.shape) == (K, 1), func


def test_a_staged_tile_covers_the_whole_extent_only_along_the_data_dependent_dimension():
    data, idx, out = _gather()
    s = sl.create_schedule(out)
    _, jo, _, _ = s[out].tile(out.op.axis[0], out.op.axis[1], 4, 3)
    staged = s.cache_read(data, "local", [out])
    s[staged].compute_at(s[out], jo)
    func = check(s, [data, idx], [out], given={idx: _indices((N, M), K)})
    (alloc,) = [a for a in walk_stmt(func.body) if isinstance(a, Allocate)]
    assert tuple(int(n) for n in alloc.buffer.shape) == (K, 3)


def _bag_vectorized(s, out):
    i, c = out.op.axis
    (j,) = out.op.reduce_axis
    s[out].reorder(i, j, c)
    s[out].parallel(i)
    s[out].vectorize(c)


def _bag_rfactor(s, out):
    _, ji = s[out].split(out.op.reduce_axis[0], factor=2)
    s.rfactor(out, ji)


BAG_SCHEDULES = {
    "default": lambda s, out: None,
    "vectorized": _bag_vectorized,
    "rfactor": _bag_rfactor,
}


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("name", sorted(BAG_SCHEDULES))
def test_an_embedding_bag_matches_the_reference(name, dtype):
    table, idx, out = _bag(dtype)
    s = sl.create_schedule(out)
    BAG_SCHEDULES[name](s, out)
    check(s, [table, idx], [out], given={idx: _indices((N, 5), K, dtype)})


def test_an_embedding_bag_with_its_indices_computed_at_and_its_table_staged():
    """The index producer per tile of rows, the table's column (every row) per output."""
    table = sl.placeholder((K, M), name="table")
    raw = sl.placeholder((N, 5), dtype="int64", name="raw")
    idx = sl.compute((N, 5), lambda i, j: raw[i, j] - 2, name="idx")
    j = sl.reduce_axis((0, 5), name="j")
    out = sl.compute((N, M), lambda i, c: sl.sum(table[idx[i, j], c] * 0.5, axis=j), name="out")
    s = sl.create_schedule(out)
    io, _ = s[out].split(out.op.axis[0], factor=3)
    s[idx].compute_at(s[out], io)
    staged = s.cache_read(table, "local", [out])
    s[staged].compute_at(s[out], out.op.axis[1])
    func = check(s, [table, raw], [out], given={raw: _indices((N, 5), K + 2, "int64")})
    shapes = {
        a.buffer.name: a.buffer.shape for a in walk_stmt(func.body) if isinstance(a, Allocate)
    }
    assert [int(n) for n in shapes["table.local"]] == [K, 1]
    assert [int(n) for n in shapes["idx"]] == [3, 5]


def test_a_scan_reads_its_previous_row_at_data_dependent_columns():
    x = sl.placeholder((N, 6), name="X")
    perm = sl.placeholder((6,), dtype="int32", name="perm")
    state = sl.placeholder((N, 6), name="state")
    init = sl.compute((1, 6), lambda _, c: x[0, c], name="init")
    step = sl.compute((N, 6), lambda t, c: state[t - 1, perm[c]] * 0.5 + x[t, c], name="step")
    res = sl.scan(init, step, state, inputs=[x])
    check(sl.create_schedule(res), [x, perm], [res], given={perm: _indices((6,), 6)})


@pytest.mark.parametrize("scale", [K / N, 3.1, -1.0, 1e30, np.nan, np.inf])
def test_a_resize_through_float_math(scale):
    """Nearest-neighbour resize as TOPI writes it: the index is a float floored and cast."""
    a = sl.placeholder((K,), name="A")
    factor = sl.var("scale", "float32")
    out = sl.compute(
        (N,), lambda i: a[sl.floor(i.astype("float32") * factor).astype("int32")], name="out"
    )
    s = sl.create_schedule(out)
    s[out].split(out.op.axis[0], factor=4)
    check(s, [a, factor], [out], given={factor: np.array(scale, "float32")})


def test_an_index_read_from_a_float_tensor():
    a = sl.placeholder((K,), name="A")
    where = sl.placeholder((N,), name="where")
    out = sl.compute((N,), lambda i: a[where[i].astype("int64")], name="out")
    s = sl.create_schedule(out)
    nasty = [0.5, -3, 1e20, -1e20, np.nan, np.inf, -np.inf, K - 0.1, K, 3.7, 12, 7, 1]
    check(s, [a, where], [out], given={where: np.array(nasty, "float32")})


def test_an_index_through_a_product_of_variables_and_two_gathers():
    a = sl.placeholder((K,), name="A")
    first = sl.placeholder((17,), dtype="int32", name="first")
    second = sl.placeholder((N,), dtype="int32", name="second")
    out = sl.compute((N,), lambda i: a[(i * i) % 50] + a[first[second[i]] + 2], name="out")
    s = sl.create_schedule(out)
    given = {first: _indices((17,), K), second: _indices((N,), 17)}
    check(s, [a, first, second], [out], given=given)


def test_an_affine_dimension_beside_a_data_dependent_one_is_still_checked():
    data = sl.placeholder((K, M), name="data")
    idx = sl.placeholder((N,), dtype="int32", name="idx")
    out = sl.compute((N, M), lambda i, j: data[idx[i], j + 1], name="out")
    with pytest.raises(sl.AlgorithmError, match=r"out of bounds: at i=\d+, j=6 it reads data\["):
        sl.lower(sl.create_schedule(out), [data, idx, out])


def _thread_local(row):
    """`twice` in registers, one element per thread, read by `out` at `row(idx, i)` (and
    `idx` at ``i``)."""
    a = sl.placeholder((32,), name="A")
    idx = sl.placeholder((32,), dtype="int32", name="idx")
    twice = sl.compute((32,), lambda i: a[i] * 2.0, name="twice")
    out = sl.compute((32,), lambda i: twice[row(idx, i)] + idx[i].astype("float32"), name="out")
    s = sl.create_schedule(out)
    s[twice].set_scope("local")
    for t in (twice, out):
        bx, tx = s[t].split(s[t].op.axis[0], factor=8)
        bind(s, t, (bx, "blockIdx.x"), (tx, "threadIdx.x"))
    return s, [a, idx], [out]


def test_a_thread_reads_only_its_own_local_values_at_a_data_dependent_index():
    """Any thread may need any element: refused, where the same read at ``i`` is not."""
    s, inputs, outputs = _thread_local(lambda idx, i: i)
    check(s, inputs, outputs, given={inputs[1]: _indices((32,), 32)})
    s, inputs, outputs = _thread_local(lambda idx, i: idx[i])
    with pytest.raises(LegalityError, match="twice"):
        sl.lower(s, inputs + outputs)


def _gpu_gather():
    data, idx, out = _gather()
    s = sl.create_schedule(out)
    fused = s[out].fuse(*out.op.axis)
    bx, tx = s[out].split(fused, factor=32)
    bind(s, out, (bx, "blockIdx.x"), (tx, "threadIdx.x"))
    return s, [data, idx], [out]


def _gpu_bag():
    """Each thread of a row's block sums some of the bag; the parts are combined across
    threads."""
    table, idx, out = _bag(width=37)
    s = sl.create_schedule(out)
    i, c = out.op.axis
    _, jt = s[out].split(out.op.reduce_axis[0], nparts=8)
    s[out].reorder(i, c, jt)
    bind(s, out, (i, "blockIdx.x"), (jt, "threadIdx.x"))
    return s, [table, idx], [out]


def _gpu_shared_table():
    """The table staged in shared memory, each block's columns of it (all the rows), copied by
    the block's threads."""
    data, idx, out = _gather()
    s = sl.create_schedule(out)
    io, jo, ii, ji = s[out].tile(out.op.axis[0], out.op.axis[1], 4, 4)
    staged = s.cache_read(data, "shared", [out])
    s[staged].compute_at(s[out], jo)
    rows, _ = s[staged].op.axis
    ro, ri = s[staged].split(rows, factor=4)
    bind(s, out, (io, "blockIdx.x"), (ii, "threadIdx.x"))
    bind(s, staged, (ri, "threadIdx.x"))
    return s, [data, idx], [out]


def _gpu_rows(m: int):
    """An embedding lookup: whole rows, four columns per thread, vectorized."""
    table = sl.placeholder((K, m), name="table")
    idx = sl.placeholder((N,), dtype="int64", name="idx")
    out = sl.compute((N, m), lambda i, c: table[idx[i], c], name="out")
    s = sl.create_schedule(out)
    i, c = out.op.axis
    co, ci = s[out].split(c, factor=4)
    bind(s, out, (i, "blockIdx.x"), (co, "threadIdx.x"))
    s[out].vectorize(ci)
    return s, [table, idx], [out]


GPU_SCHEDULES = {
    "gather": _gpu_gather,
    "bag": _gpu_bag,
    "shared_table": _gpu_shared_table,
    "rows_aligned": lambda: _gpu_rows(16),
    "rows_unaligned": lambda: _gpu_rows(7),
}


def _gpu_indices(s, inputs) -> dict:
    (idx,) = [p for p in inputs if p.name == "idx"]
    shape = tuple(int(n) for n in idx.shape)
    extent = int(inputs[0].shape[0])
    return {idx: _indices(shape, extent, idx.dtype)}


@pytest.mark.parametrize("name", sorted(GPU_SCHEDULES))
def test_a_gpu_schedule_matches_in_the_interpreter_and_assembles(name):
    s, inputs, outputs = GPU_SCHEDULES[name]()
    check(s, inputs, outputs, given=_gpu_indices(s, inputs))
    kernel = sl.build(s, inputs + outputs, target="cuda")
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0
    assert ("ld.shared" in kernel.ptx) == (name == "shared_table")
    if name.startswith("rows"):  # 16-byte loads only where a row starts 16-byte aligned
        assert ("ld.global.nc.v4" in kernel.ptx) == (name == "rows_aligned")


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_SCHEDULES))
def test_a_gpu_schedule_matches_the_reference_on_the_gpu(name):
    s, inputs, outputs = GPU_SCHEDULES[name]()
    values = {**random_inputs(inputs[:1], {}), **_gpu_indices(s, inputs)}
    wants = [sl.evaluate(t, values) for t in outputs]
    results = [np.full(w.shape, np.nan, w.dtype) for w in wants]
    sl.build(s, inputs + outputs, target="cuda")(*[values[p] for p in inputs], *results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
