"""Cross-thread reductions (block collectives) on the cuda target: the form each block shape
gets, PTX that ptxas accepts with the shared memory the plan counts, and, on a GPU, every form
against the reference (sums, max, a custom reducer, float64 and int32, sizes that the threads
do not divide, down to one element)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx.allreduce import layout
from schedlang.ir.expr import const
from schedlang.ir.reduce import sum as sum_reducer
from schedlang.loopir.core.nodes import Allocate, Buffer, For, LoweredFunc, ThreadAllReduce
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.interpret import run
from schedlang.runtime.kernel import Kernel
from tests.schedule.util import random_inputs

from .kernels import REDUCTIONS, column_reduce
from .ptxas import assemble

SIZES = {"n": 45}


def collective(tags: tuple[str, ...]) -> ThreadAllReduce:
    partial = Buffer("partial", (const(1),), "float32", "local")
    total = Buffer("total", (const(1),), "float32", "local")
    return ThreadAllReduce((sum_reducer.combiner("float32"),), (partial,), (total,), tags)


@pytest.mark.parametrize(
    ("tags", "block", "form", "group"),
    [
        (("threadIdx.x",), (16, 4, 1), "warp", 16),
        (("threadIdx.x",), (5, 4, 1), "warp", 5),  # 20 threads: one warp holds the block
        (("threadIdx.x",), (5, 8, 1), "shared", 5),  # groups of 5 straddle warps
        (("threadIdx.x",), (128, 2, 1), "warps", 128),
        (("threadIdx.x",), (48, 2, 1), "shared", 48),
        (("threadIdx.x", "threadIdx.y"), (8, 2, 3), "warp", 16),
        (("threadIdx.y",), (1, 64, 1), "warps", 64),  # x has one thread: y varies fastest
        (("threadIdx.y",), (4, 8, 1), "shared", 8),
        (("threadIdx.x",), (1, 8, 1), "copy", 1),
    ],
)
def test_each_block_shape_gets_its_form(tags, block, form, group):
    plan = layout(collective(tags), block)
    assert (plan.form, plan.group) == (form, group)


def build(name: str):
    make, args, _ = REDUCTIONS[name]
    s, inputs, outputs = make(*args)
    return sl.build(s, inputs + outputs, target="cuda"), inputs, outputs


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_assembles_in_its_form(name):
    kernel, inputs, outputs = build(name)
    (config,) = kernel.launch_config
    (stmt,) = [s for s in walk_stmt(kernel.lowered.body) if isinstance(s, ThreadAllReduce)]
    form = layout(stmt, config.block).form
    assert form == REDUCTIONS[name][2]
    report = assemble(kernel.ptx)
    assert report.shared_bytes == config.shared_bytes
    assert report.spill_bytes == 0 and report.stack_bytes == 0
    assert ("shfl.sync.down" in kernel.ptx) == (form in ("warp", "warps"))
    assert ("shfl.sync.idx" in kernel.ptx) == (form == "warp")
    assert (config.shared_bytes > 0) == (form in ("warps", "shared"))
    assert ("bar.sync" in kernel.ptx) == (form in ("warps", "shared"))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_schedules_match_the_reference_in_the_interpreter(name):
    """The GPU tests below compare with the same reference; this keeps the schedules honest
    where no GPU is."""
    kernel, inputs, outputs = build(name)
    arrays, wants = expected(inputs, outputs)
    results = [np.full(w.shape, np.nan if w.dtype.kind == "f" else 7, w.dtype) for w in wants]
    run(kernel.lowered, arrays + results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def expected(inputs, outputs):
    values = random_inputs(inputs, SIZES, seed=11)
    values = {p: (v * 3).astype(np.dtype(p.dtype)) for p, v in values.items()}
    return [values[p] for p in inputs], [sl.evaluate(t, values) for t in outputs]


def test_the_cpu_target_refuses_a_collective():
    stmt = collective(("threadIdx.x",))
    out = Buffer("Out", (const(1),), "float32")
    body = Allocate(stmt.sources[0], Allocate(stmt.results[0], stmt))
    func = LoweredFunc("allreduce", (out,), (), body)
    with pytest.raises(sl.LoweringError, match="combines the threads of a GPU block; the cpu"):
        Kernel.for_cpu(func)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("shared", ["static", "dynamic"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_matches_the_reference_on_the_gpu(name, shared, request):
    """Each form, with its scratch as static arrays and as dynamic shared memory (as it is in
    a kernel above 48 KB)."""
    if shared == "dynamic":
        request.getfixturevalue("all_dynamic")
    kernel, inputs, outputs = build(name)
    for config in kernel.launch_config:
        assert config.dynamic_shared == (shared == "dynamic" and config.shared_bytes > 0)
    arrays, wants = expected(inputs, outputs)
    results = [np.full(w.shape, np.nan if w.dtype.kind == "f" else 7, w.dtype) for w in wants]
    kernel(*arrays, *results, **{k: v for k, v in SIZES.items() if k in kernel_sizes(kernel)})
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def kernel_sizes(kernel) -> set[str]:
    return {v.name for v in kernel.lowered.sizes}


def _collectives_and_loops(s, inputs, outputs):
    body = sl.lower(s, inputs + outputs).body
    collectives = [x for x in walk_stmt(body) if isinstance(x, ThreadAllReduce)]
    serial = [x for x in walk_stmt(body) if isinstance(x, For) and x.kind == "serial"]
    inside = [c for loop in serial for c in walk_stmt(loop.body) if isinstance(c, ThreadAllReduce)]
    return collectives, inside


def test_threads_accumulate_across_the_serial_reduce_loop_then_combine_once():
    """A reduce axis split in two, the inner part bound to threadIdx.y: each thread sums its
    share over k.outer alone, and the block combines once after the loop (as TE lowers it),
    not once per step of k.outer."""
    s, inputs, outputs = column_reduce(6, 37, 8, 4)
    collectives, inside = _collectives_and_loops(s, inputs, outputs)
    assert len(collectives) == 1 and not inside


def test_a_serial_loop_over_the_output_keeps_one_collective_per_step():
    """Rows handled one after another by a serial loop: each row's result is its own
    collective, inside the loop (accumulating across rows would mix them)."""
    a = sl.placeholder((6, 40), name="A")
    k = sl.reduce_axis((0, 40), name="k")
    b = sl.compute((6,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b)
    ko, ki = s[b].split(k, factor=8)
    s[b].bind(ki, sl.thread_axis("threadIdx.x"))
    s[b].reorder(b.op.axis[0], ko, ki)
    collectives, inside = _collectives_and_loops(s, [a], [b])
    assert len(collectives) == 1 and collectives == inside
