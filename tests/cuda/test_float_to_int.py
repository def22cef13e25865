"""Float-to-integer casts on the CUDA target: PTX's saturating ``cvt.rzi`` with no compare and
select around it (but the NaN test into 64 bits), accepted by ptxas, and on a GPU the values
of the reference at the edges of every integer dtype."""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from tests.codegen.test_float_to_int import casts, edge_values, poisoned, saturated
from tests.schedule.test_gpu_schedules import bind

from .ptxas import assemble


def build(source: str):
    p, outs = casts(source)
    s = sl.create_schedule(outs)
    for out in outs:
        xo, xi = s[out].split(out.op.axis[0], factor=32)
        bind(s, out, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    return sl.build(s, [p, *outs], target="cuda"), p, outs


def kernel_bodies(ptx: str) -> list[str]:
    return ptx.split(".entry")[1:]


@pytest.mark.parametrize("source", dt.FLOATS)
def test_each_conversion_is_one_cvt_clamped_in_integers(source):
    kernel, _, outs = build(source)
    assemble(kernel.ptx)
    bodies = kernel_bodies(kernel.ptx)
    assert len(bodies) == len(outs)
    width = "f64" if source == "float64" else "f32"
    for out, body in zip(outs, bodies):
        wide = "64" if out.dtype == "int64" else "32"
        sign = "s" if out.dtype in dt.SIGNED else "u"
        assert re.search(rf"cvt\.rzi\.{sign}{wide}\.{width}", body), out.name
        nan_to_min = out.dtype == "int64" or source == "float64"  # cvt.rzi's NaN needs a select
        assert "selp" not in body or nan_to_min, out.name
        nan_tests = len(re.findall(r"setp\.(nan|num)\.", body))
        assert (nan_tests > 0) == nan_to_min, out.name
        assert not re.search(r"(max|min)\.f(32|64)", body), out.name


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("source", dt.FLOATS)
def test_gpu_conversions_saturate(source):
    kernel, p, outs = build(source)
    values = edge_values(source)
    results = poisoned(outs, len(values))
    kernel(values, *results)
    for out, got in zip(outs, results):
        np.testing.assert_array_equal(got, saturated(values, out.dtype), err_msg=out.name)
        np.testing.assert_array_equal(got, sl.evaluate(out, {p: values}))
