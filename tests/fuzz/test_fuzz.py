"""The fuzzer's bounded sample for every test run: derandomized and without a database, so a
run is reproducible; ``benchmarks/fuzz.py`` runs the long campaigns."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .guards import PAD, Guarded
from .properties import cpu_property, gpu_device_property, gpu_interpreter_property
from .verdict import Tally


def sample(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@sample(500)
@given(data=st.data())
def test_cpu_schedules(data):
    cpu_property(data, Tally())


@sample(300)
@given(data=st.data())
def test_gpu_schedules_in_the_simt_interpreter(data):
    gpu_interpreter_property(data, Tally())


@pytest.mark.gpu
@sample(120)
@given(data=st.data())
def test_gpu_schedules_on_the_gpu(data):
    gpu_device_property(data, Tally())


@pytest.mark.parametrize("where", [-1, 3])
def test_guard_zones_see_a_write_beside_the_array(where):
    g = Guarded((3,))
    g.flat[PAD + where] = 1.0
    assert g.damage() is not None
    assert not g.changed()


def test_guard_zones_keep_the_array_contiguous_and_aligned():
    g = Guarded((5, 3))
    assert g.view.flags.c_contiguous and g.view.ctypes.data % 16 == 0
    g.view[...] = 2.0
    assert g.damage() is None and g.changed()
