"""Kernels with many loop nests build in seconds: a hundred outputs, a long sequence of nests.

LLVM's time grew with the square of what one function held: the argument guard's overlap
checks (a branch per pair of arguments) and the loop passes over a function of a hundred loops.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.cpu.guard_ir import guard_text
from schedlang.codegen.cpu.outline import NESTS_TOGETHER
from schedlang.codegen.cpu.trampoline import array_layout
from schedlang.runtime.fast_path import guard_spec


def _outputs(count: int):
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")

    def output(k: int):
        return sl.compute((n,), lambda i: a[i] * float(k + 1) - 0.5, name=f"O{k}")

    outs = [output(k) for k in range(count)]
    return a, outs, sl.create_schedule([o.op for o in outs])


def test_a_hundred_outputs_build_in_seconds_and_compute_each_its_own():
    a, outs, s = _outputs(100)
    start = time.perf_counter()
    kernel = sl.build(s, [a, *outs])
    assert time.perf_counter() - start < 60  # minutes before, seconds now
    assert kernel.llvm_ir.count("define internal i32 @") >= 100  # a function a nest
    x = np.random.default_rng(3).standard_normal(37).astype(np.float32)
    ys = [np.full(37, np.nan, np.float32) for _ in outs]
    kernel(x, *ys)
    for k, y in enumerate(ys):
        np.testing.assert_array_equal(y, sl.reference(outs[k], {a: x}))


def test_a_few_nests_stay_in_one_function():
    a, outs, s = _outputs(NESTS_TOGETHER)
    kernel = sl.build(s, [a, *outs])
    assert ".nest" not in kernel.llvm_ir


def test_the_guard_checks_overlaps_in_a_loop_not_a_branch_a_pair():
    a, outs, s = _outputs(60)
    kernel = sl.build(s, [a, *outs])
    spec = guard_spec(kernel.lowered, kernel._written, kernel._limits)
    text = guard_text(spec, array_layout())
    assert text.count("br i1") < 20 * 61  # a few checks an argument, not 60 * 60 pairs
    x = np.ones(5, np.float32)
    ys = [np.empty(5, np.float32) for _ in outs]
    ys[7] = ys[3]  # an output given twice: the guard declines, the general path explains
    with pytest.raises(ValueError, match="'O3' is an output that overlaps 'O7' in memory"):
        kernel(x, *ys)
