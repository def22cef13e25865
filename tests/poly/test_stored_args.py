"""Intermediate stages listed in args are stored whole in the caller's array, or refused.

Each kernel runs on random inputs with every argument, the intermediate included, poisoned with
NaN first; the intermediate's array must hold the reference's values at every index.
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.interpret import run
from schedlang.schedule.errors import PlacementError, ScopeError
from tests.schedule.util import random_inputs

N = sl.var("n")


def run_all(kernel, inputs, computed, sizes, backends=("interpreter", "cpu")):
    """Every array of `computed` (intermediates and outputs) from each backend vs reference."""
    values = random_inputs(inputs, sizes)
    wants = [sl.reference(t, values) for t in computed]
    for backend in backends:
        arrays = [np.full(w.shape, np.nan, np.float32) for w in wants]
        given = [values[p] for p in inputs] + arrays
        if backend == "interpreter":
            run(kernel.lowered, given)
        else:
            kernel(*given)
        for tensor, got, want in zip(computed, arrays, wants):
            np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"{backend}: {tensor.name}")


def chain(n=N):
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] + 1.0, name="B")
    c = sl.compute((n,), lambda i: b[i] * 2.0, name="C")
    return a, b, c


@pytest.mark.parametrize("n", [64, 61])
def test_an_intermediate_computed_at_a_split_axis_is_stored_at_its_own_indices(n):
    a, b, c = chain()
    s = sl.create_schedule(c)
    xo, _ = s[c].split(c.op.axis[0], factor=8)
    s[b].compute_at(s[c], xo)
    kernel = sl.build(s, [a, b, c])
    run_all(kernel, [a], [b, c], {"n": n})


def test_an_intermediate_computed_at_root_is_stored():
    a, b, c = chain(37)
    s = sl.create_schedule(c)
    run_all(sl.build(s, [a, b, c]), [a], [b, c], {})


def test_an_overlapping_stencil_recomputed_serially_is_stored():
    a = sl.placeholder((25,), name="A")
    b = sl.compute((25,), lambda i: a[i] * 3.0, name="B")
    c = sl.compute((23,), lambda i: b[i] + b[i + 1] + b[i + 2], name="C")
    s = sl.create_schedule(c)
    xo, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], xo)
    run_all(sl.build(s, [a, b, c]), [a], [b, c], {})


def test_a_reduction_computed_at_a_loop_is_stored():
    a = sl.placeholder((N, 9), name="A")
    k = sl.reduce_axis((0, 9), name="k")
    b = sl.compute((N,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    c = sl.compute((N,), lambda i: b[i] * 0.5, name="C")
    s = sl.create_schedule(c)
    xo, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], xo)
    s[c].parallel(xo)
    run_all(sl.build(s, [a, b, c]), [a], [b, c], {"n": 19})


def test_an_intermediate_computed_per_gpu_thread_is_stored():
    a, b, c = chain()
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], tx)
    kernel = sl.build(s, [a, b, c], target="cuda")
    assert "B[" in str(kernel.lowered)
    run_all(kernel, [a], [b, c], {"n": 77}, backends=("interpreter",))


@pytest.mark.gpu
def test_an_intermediate_computed_per_gpu_thread_is_stored_on_the_gpu():
    a, b, c = chain()
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], tx)
    kernel = sl.build(s, [a, b, c], target="cuda")
    run_all(kernel, [a], [b, c], {"n": 1001}, backends=("cuda",))


def test_an_inlined_intermediate_in_args_is_refused():
    a, b, c = chain()
    s = sl.create_schedule(c)
    s[b].compute_inline()
    with pytest.raises(
        sl.LoweringError,
        match=r"In schedule for 'B': compute_inline\(\) at test_stored_args.py:\d+: 'B' is in "
        r"args, but inlined into its readers it has no values of its own",
    ):
        sl.build(s, [a, b, c])


def test_parallel_parts_that_overlap_are_refused():
    a = sl.placeholder((N,), name="A")
    b = sl.compute((N,), lambda i: a[i] * 3.0, name="B")
    c = sl.compute((N - 1,), lambda i: b[i] + b[i + 1], name="C")
    s = sl.create_schedule(c)
    xo, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], xo)
    s[c].parallel(xo)
    with pytest.raises(
        PlacementError,
        match=r"compute_at\(s\[C\], i.outer\) at test_stored_args.py:\d+: 'B' is in args, .* "
        r"the parts computed at \(i.outer=\d+\) and at \(i.outer=\d+\) share elements and run "
        r"in parallel \(loops 'i.outer'\)",
    ):
        sl.build(s, [a, b, c])
    sl.build(s, [a, c])  # its own buffer per part: legal


def test_threads_filling_a_stored_intermediate_together_are_refused():
    a, b, c = chain()
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, sl.thread_axis("blockIdx.x"))
    s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].compute_at(s[c], bx)
    s[b].bind(b.op.axis[0], sl.thread_axis("threadIdx.x"))
    with pytest.raises(PlacementError, match=r"its loop 'i' is bound to threadIdx.x"):
        sl.build(s, [a, b, c], target="cuda")


@pytest.mark.parametrize(
    "primitive, call",
    [
        (lambda st: st.set_scope("shared"), r"set_scope\('shared'\)"),
        (lambda st: st.double_buffer(), r"double_buffer\(\)"),
        (lambda st: st.storage_align(st.op.axis[0], 8, 1), r"storage_align\(...\)"),
    ],
)
def test_a_layout_the_callers_array_cannot_have_is_refused(primitive, call):
    a = sl.placeholder((16, 16), name="A")
    b = sl.compute((16, 16), lambda i, j: a[i, j] + 1.0, name="B")
    c = sl.compute((16, 16), lambda i, j: b[i, j] * 2.0, name="C")
    s = sl.create_schedule(c)
    xo, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], xo)
    primitive(s[b])
    with pytest.raises(ScopeError, match=rf"In schedule for 'B': {call}.*'B' is in args"):
        sl.build(s, [a, b, c])


def test_a_tensor_listed_twice_in_args_is_refused():
    a, b, c = chain()
    s = sl.create_schedule(c)
    with pytest.raises(
        sl.LoweringError, match=r"'A' is listed twice in args \(positions 0 and 1\)"
    ):
        sl.build(s, [a, a, c])


def test_a_size_listed_in_args():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    match = r"argument 'n' is a size \(an sl.var\), not a tensor.*kernel\(\.\.\., n=value\)"
    with pytest.raises(sl.LoweringError, match=match):
        sl.build(sl.create_schedule(b), [a, b, n])
