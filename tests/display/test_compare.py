"""`sl.compare`: schedules of one algorithm built, checked against the reference and timed."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.display.ceilings import Ceilings
from schedlang.display.compare import Comparison, Measured
from schedlang.display.work import count_flops
from schedlang.runtime.cuda.peaks import peaks_from_attributes

from .algorithms import cpu_tiled, matmul

SIZES = {"M": 24, "N": 20, "K": 12}


def test_two_cpu_schedules_of_a_matmul_both_verify():
    a, b, c = matmul()
    result = sl.compare(
        {"naive": sl.create_schedule(c), "tiled": lambda: cpu_tiled(c)},
        [a, b, c],
        sizes=SIZES,
        repeat=2,
    )
    assert result.names == ["naive", "tiled"]
    assert all(row.verified for row in result.rows)
    assert result.flops == 2 * 24 * 20 * 12
    assert result.bytes == 4 * (24 * 12 + 12 * 20 + 24 * 20)
    text = str(result).splitlines()
    assert text[1].split() == ["schedule", "verified", "time", "(ms)", "GFLOP/s", "share"]
    assert [line.split()[:2] for line in text[2:]] == [["naive", "yes"], ["tiled", "yes"]]
    assert "100% of the fastest" in str(result)
    html = result._repr_html_()
    assert html.count("<tr>") == 3 and html.count(">yes</span>") == 2


def test_given_inputs_fix_the_sizes():
    a, b, c = matmul()
    rng = np.random.default_rng(1)
    inputs = {
        a: rng.standard_normal((5, 3), np.float32),
        b: rng.standard_normal((3, 7), np.float32),
    }
    result = sl.compare({"naive": sl.create_schedule(c)}, [a, b, c], inputs=inputs, repeat=1)
    assert result.rows[0].verified
    assert result.flops == 2 * 5 * 7 * 3


def test_schedules_of_different_algorithms_are_refused():
    a, b, c = matmul()
    a2, b2, c2 = matmul()
    schedules = {"first": sl.create_schedule(c), "other": sl.create_schedule(c2)}
    with pytest.raises(sl.ScheduleError, match="schedule 'other' is of another algorithm"):
        sl.compare(schedules, [a, b, c], sizes=SIZES)


def test_sizes_must_be_given_without_inputs():
    a, b, c = matmul()
    with pytest.raises(ValueError, match="give a value for each symbolic size, e.g. M=64"):
        sl.compare({"naive": sl.create_schedule(c)}, [a, b, c])


def test_a_wrong_result_is_reported_not_raised():
    a, b, c = matmul()
    result = sl.compare({"naive": sl.create_schedule(c)}, [a, b, c], sizes=SIZES, repeat=1)
    row = result.rows[0]
    wrong = Measured("wrong", row.kernel, False, 0.5, row.seconds)
    shown = Comparison((row, wrong), result.flops, result.bytes, "cpu", "float32", None)
    assert "NO (error 0.5)" in str(shown)
    assert ">NO (error 0.5)</span>" in shown._repr_html_()


def test_a_schedule_that_cannot_be_built_is_a_row_not_an_exception():
    """A grid of schedules has illegal points; the others are still compared."""
    a, b, c = matmul()

    def unrolled_symbolic_loop():
        s = sl.create_schedule(c)
        s[c].unroll(c.op.axis[1])  # N is symbolic: only lowering finds the extent unknown
        return s

    result = sl.compare(
        {"naive": sl.create_schedule(c), "illegal": unrolled_symbolic_loop},
        [a, b, c],
        sizes=SIZES,
        repeat=1,
    )
    naive, illegal = result.rows
    assert naive.verified and naive.built
    assert not illegal.built and not illegal.verified
    assert isinstance(illegal.failure, sl.ScheduleError)
    assert "unroll(j)" in str(illegal.failure)
    assert result.built == [naive]
    text = str(result)
    lines = text.splitlines()
    assert lines[2].split()[:2] == ["naive", "yes"]
    assert lines[3].split() == ["illegal", "not", "built:", "AnnotationError"]
    one_line = " ".join(str(illegal.failure).splitlines())
    assert f"illegal: {one_line}" in text.splitlines()[-1]
    assert "100% of the fastest" in text
    assert "not built: AnnotationError" in result._repr_html_()
    result.plot()


def test_flops_count_the_arithmetic_of_the_definition():
    n = sl.var("n")
    x = sl.placeholder((n,), name="x")
    y = sl.compute((n,), lambda i: sl.exp(x[i]) * 2.0 + x[i], name="y")
    k = sl.reduce_axis((0, n), name="k")
    z = sl.compute((1,), lambda i: sl.max(y[k], axis=k), name="z")
    # y: exp, *, + per element; z: one combine per reduced element; index arithmetic is free
    assert count_flops([z.op], {n: 10}) == 10 * 3 + 10


def test_share_is_of_the_roofline_when_the_roofs_are_known():
    a, b, c = matmul()
    result = sl.compare({"naive": sl.create_schedule(c)}, [a, b, c], sizes=SIZES, repeat=1)
    row = result.rows[0]
    roofs = Ceilings("test device", flops=1e12, bandwidth=1e9, source="given")
    known = Comparison(result.rows, result.flops, result.bytes, "cpu", "float32", roofs)
    share, of = known.share(row)
    bound = min(1e12, result.flops / result.bytes * 1e9)
    assert of == "of the roofline"
    assert share == pytest.approx(result.flops / row.seconds / bound)


def test_gpu_peaks_from_the_driver_attributes_of_an_h100():
    peaks = peaks_from_attributes("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000, 2_619_000, 5120)
    assert peaks.flops["float32"] == pytest.approx(66.9e12, rel=1e-3)
    assert peaks.flops["float64"] == pytest.approx(33.45e12, rel=1e-3)
    assert peaks.bandwidth == pytest.approx(3.35e12, rel=1e-3)
    assert peaks_from_attributes("new", (99, 0), 1, 1, 1, 8).flops["float32"] is None


def test_a_schedule_function_refused_at_a_primitive_is_a_row_too():
    a, b, c = matmul()

    def vectorized_reduction():
        s = sl.create_schedule(c)
        s[c].vectorize(c.op.reduce_axis[0])  # refused at the call
        return s

    result = sl.compare(
        {"naive": sl.create_schedule(c), "illegal": vectorized_reduction},
        [a, b, c],
        sizes=SIZES,
        repeat=1,
    )
    naive, illegal = result.rows
    assert naive.verified and not illegal.built
    assert type(illegal.failure).__name__ == "LegalityError"
    assert "vectorize(k)" in str(illegal.failure)
