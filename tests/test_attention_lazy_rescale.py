"""Attention on the tensor cores with its output's rescale skipped where the factors are 1
(``pragma(step, "skip_unit_scales")``, `loopir.gpu.skip_unit_scales`) and with a lagging
reference maximum (``online(..., threshold=)``, FlashAttention 4's lazy rescale), in the
simulator and on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_attention
from schedlang.ir.printer import expr_str
from schedlang.loopir.core.nodes import For, If
from schedlang.loopir.core.visit import walk_stmt
from tests.cuda.ptxas import assemble
from tests.test_examples import _io, attention_reference

PRODUCER = dict(keys=128, stages=3, tma=True, warp_specialize=True, overlap=True)


def _inputs(shape, seed: int, growing: bool) -> list[np.ndarray]:
    """Q, K, V; with `growing`, keys that grow along the sequence, so that a row's maximum
    keeps growing and a small threshold is passed again and again."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    if growing:
        k = k * np.linspace(0.2, 4.0, shape[1])[None, :, None]
    return [x.astype(np.float16) for x in (q, k, v)]


def _right(run, shape, causal: bool, seed: int, growing: bool) -> None:
    q, k, v = _inputs(shape, seed, growing)
    out = np.full(shape, np.nan, np.float16)
    run(q, k, v, out)
    want = attention_reference(q, k, v, causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=4e-3)


def _rescale_tests(lowered) -> list[str]:
    """The tests of the output's rescales in the step loops: the rescale's factors against 1."""
    steps = [n for n in walk_stmt(lowered.body) if isinstance(n, For) and n.var.name == "j.step"]
    return [
        expr_str(n.cond)
        for step in steps
        for n in walk_stmt(step)
        if isinstance(n, If) and expr_str(n.cond).endswith("!= 1.0")
    ]


def _skip_unit_scales(s: sl.Schedule) -> None:
    update = next(stage for stage in s.stages if stage.name == "M.online.M_update")
    s[update].pragma(update.op.axis[0], "skip_unit_scales")


@pytest.mark.parametrize("threshold", [None, 1.0])
@pytest.mark.parametrize("causal", [False, True])
def test_the_output_is_rescaled_only_where_a_factor_is_not_one_simulated(causal, threshold):
    """Each step loop tests the thread's two factors (its rows) before the 64 products of the
    rescale; with a threshold (which asks for the pragma) the factors are the reference's,
    and the sums are caught up to the maximum after the loop. Simulated against float64, with
    keys that grow along the sequence (the reference moves at some steps and not at
    others)."""
    tensors = gpu_attention.tensor_core_attention(3, 384, 64, causal=causal)
    s = gpu_attention.wgmma_schedule(*tensors, **PRODUCER, threshold=threshold)
    if threshold is None:  # the skip alone, asked for by its pragma
        _skip_unit_scales(s)
    kernel = sl.build(s, _io(tensors), "cuda")
    tests = _rescale_tests(kernel.lowered)
    state = "M.run" if threshold is None else "M.reference"
    assert tests and all(t.count("fast_exp2(") == 2 and f"{state}.prev[1]" in t for t in tests)
    assert ("M.lag" in str(kernel.lowered)) == (threshold is not None)
    for growing in (False, True):
        _right(kernel.simulate, (3, 384, 64), causal, seed=5, growing=growing)


def test_the_rescales_branch_keeps_the_products_in_flight():
    """At the benchmark's d = 128 with a threshold: no spills, no serialised products."""
    tensors = gpu_attention.tensor_core_attention(64, 4096, 128, causal=True)
    s = gpu_attention.wgmma_schedule(*tensors, **PRODUCER, threshold=8.0)
    report = assemble(sl.build(s, _io(tensors), "cuda").ptx)
    assert report.spill_bytes == 0 and "serialized" not in report.log, report.log


def test_without_the_pragma_every_step_rescales():
    tensors = gpu_attention.tensor_core_attention(3, 384, 64, causal=True)
    s = gpu_attention.wgmma_schedule(*tensors, **PRODUCER)
    assert not _rescale_tests(sl.build(s, _io(tensors), "cuda").lowered)


def test_the_pragma_on_a_loop_without_a_rescale_is_refused():
    x = sl.placeholder((4, 64), name="X")
    y = sl.compute((4, 64), lambda i, j: x[i, j] * 2.0, name="Y")
    s = sl.create_schedule(y)
    i, j = y.op.axis
    s[y].bind(i, sl.thread_axis("blockIdx.x"))
    s[y].pragma(j, "skip_unit_scales")
    with pytest.raises(sl.LoweringError, match=r"pragma\(j, \"skip_unit_scales\"\): the loop j "
                       "holds no rescale of a register tile"):  # fmt: skip
        sl.build(s, [x, y], "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("threshold", [None, 1.0, 8.0])
@pytest.mark.parametrize("causal", [False, True])
def test_a_lagging_reference_on_the_gpu(causal, threshold):
    """The benchmark's kernel at d = 128 (a producer warpgroup, the overlap) on the GPU, with
    and without a threshold, on plain and growing keys."""
    shape = (3, 640, 128)
    tensors = gpu_attention.tensor_core_attention(*shape, causal=causal)
    s = gpu_attention.wgmma_schedule(*tensors, **PRODUCER, threshold=threshold)
    if threshold is None:
        _skip_unit_scales(s)
    kernel = sl.build(s, _io(tensors), "cuda")
    for growing in (False, True):
        _right(kernel, shape, causal, seed=9, growing=growing)


@pytest.mark.gpu
def test_the_fast_exponential_of_zero_is_one_on_the_gpu():
    """The rescale is skipped only where its factors compare equal to 1: ``fast_exp2`` (the
    approximate ``ex2``) of a zero difference must be exactly 1 for the skip to happen."""
    x = sl.placeholder((256,), name="X")
    y = sl.compute((256,), lambda i: sl.fast_exp2(x[i] - x[i]), name="Y")
    s = sl.create_schedule(y)
    outer, inner = s[y].split(y.op.axis[0], factor=128)
    s[y].bind(outer, sl.thread_axis("blockIdx.x"))
    s[y].bind(inner, sl.thread_axis("threadIdx.x"))
    data = np.random.default_rng(3).standard_normal(256).astype(np.float32) * 100
    out = np.full(256, np.nan, np.float32)
    sl.build(s, [x, y], "cuda")(data, out)
    assert (out == 1.0).all()
