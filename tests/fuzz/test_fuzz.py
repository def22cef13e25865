"""The fuzzer's bounded sample for every test run: derandomized and without a database, so a
run is reproducible; ``benchmarks/fuzz.py`` runs the long campaigns.

The tensor-core sample is kept to 80 cases (about 30 s on two cores, PTX assembled by ptxas
where it is installed): the SIMT interpreter runs every lane of every warp."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedlang as sl
from schedlang.ir import dtype as dt
from tests.schedule.util import random_inputs

from .attention import FAMILY, attention_interpreter_property
from .cases import Case
from .guards import PAD, Guarded
from .properties import check_cpu, cpu_property, gpu_device_property, gpu_interpreter_property
from .tensor_cores import tensor_core_device_property, tensor_core_interpreter_property
from .verdict import KNOWN_FINDINGS, FuzzFailure, Tally, lowering_verdict


def sample(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


CPU = Tally()


@sample(500)
@given(data=st.data())
def test_cpu_schedules(data):
    cpu_property(data, CPU)


def test_the_cpu_sample_took_primitives_back():
    """The sample above drew undo after primitives, alone (then the primitive again) and with
    primitives before it, and still reached kernels that matched (it runs first, in file
    order)."""
    if not CPU.counts:  # run alone: draw the sample here
        test_cpu_schedules()
    assert CPU.counts["undo: applied again"] > 0
    assert CPU.counts["undo: several primitives"] > 0
    assert CPU.counts["ran and matched"] > 0


def test_the_cpu_sample_read_at_data_dependent_indices():
    if not CPU.counts:
        test_cpu_schedules()
    assert CPU.by_family["gather"]["ran and matched"] > 0


def test_the_cpu_sample_dequantised_packed_int4_weights_and_drew_their_refusals():
    """int4 cases ran and matched, and packed_int4 refused the layouts it cannot hold when
    they were defined. (A weight of odd K packed by hand, refused when lowered, is drawn too
    seldom for every sample to hold one: tests/ir/test_int4.py checks its refusal.)"""
    if not CPU.counts:
        test_cpu_schedules()
    counts = CPU.by_family["int4"]
    assert counts["ran and matched"] > 0, counts
    assert counts["int4 layout refused when defined"] > 0, counts


def test_the_cpu_sample_fused_chains_online_and_was_refused_others():
    if not CPU.counts:
        test_cpu_schedules()
    assert CPU.counts["primitive: online"] > 0  # softmax's and layer norm's chains
    assert CPU.counts["primitive rejected: OnlineError"] > 0


@sample(300)
@given(data=st.data())
def test_gpu_schedules_in_the_simt_interpreter(data):
    gpu_interpreter_property(data, Tally())


INT4_SIMT = Tally()


@sample(40)
@given(data=st.data())
def test_int4_schedules_in_the_simt_interpreter(data):
    """Packed int4 weights under GPU schedules, the int4 example's recipe among them: four
    stages to bind or place (the weight, the sum, the output, caches), so that many random
    schedules leave one unbound and are refused; the general sample above draws too few of
    them to be sure to reach a kernel."""
    gpu_interpreter_property(data, INT4_SIMT, families=("int4",))


def test_the_int4_simt_sample_dequantised_packed_int4_weights():
    if not INT4_SIMT.counts:  # run alone: draw the sample here
        test_int4_schedules_in_the_simt_interpreter()
    counts = INT4_SIMT.by_family["int4"]
    assert counts["ran and matched"] > 0, counts
    assert INT4_SIMT.counts["int4 gemm recipe"] > 0, INT4_SIMT.counts


@pytest.mark.gpu
@sample(120)
@given(data=st.data())
def test_gpu_schedules_on_the_gpu(data):
    gpu_device_property(data, Tally())


SCANS = Tally()


@sample(200)
@given(data=st.data())
def test_scan_schedules(data):
    """Scans with several init rows, fewer steps than rows at the call (refused by every
    kernel and the reference), and body stages whose steps run at the same time (refused)."""
    cpu_property(data, SCANS, families=("scan",))


def test_the_scan_sample_drew_refusals_and_kernels():
    if not SCANS.counts:  # run alone: draw the sample here
        test_scan_schedules()
    counts = SCANS.by_family["scan"]
    assert counts["ran and matched"] > 0, counts
    assert counts["refused at the call"] > 0, counts
    assert counts["scan steps at the same time: refused"] > 0, counts


WGMMA_ATTENTION = Tally()


@sample(16)
@given(data=st.data())
def test_attention_on_the_tensor_cores_in_the_simt_interpreter(data):
    attention_interpreter_property(data, WGMMA_ATTENTION)


def test_the_tensor_core_attention_sample_ran():
    """The sample above ran kernels, some with the second products overlapped (the shapes
    it cannot reach in 16 cases have tests of their own in test_examples)."""
    if not WGMMA_ATTENTION.counts:  # another worker ran it
        test_attention_on_the_tensor_cores_in_the_simt_interpreter()
    counts = WGMMA_ATTENTION.by_family[FAMILY]
    assert counts["ran and matched"] > 0, counts
    assert counts["ran, the second products overlapped"] > 0, counts


TENSOR_CORES = Tally()


@sample(80)
@given(data=st.data())
def test_tensor_core_schedules_in_the_simt_interpreter(data):
    tensor_core_interpreter_property(data, TENSOR_CORES)


def test_the_tensor_core_sample_both_ran_and_refused():
    """The sample above reached kernels and refusals, defects among them (it runs first, in
    file order): a change that makes every case a refusal would pass it silently otherwise."""
    if not TENSOR_CORES.counts:
        pytest.skip("the sample did not run")
    families = TENSOR_CORES.by_family
    assert families["tensor_cores"]["ran and matched"] > 0
    refused = [f for f, c in families.items() if any(k.startswith("lowering") for k in c)]
    assert len(refused) >= 3, families  # defects of three kinds at least


@pytest.mark.gpu
@sample(100)
@given(data=st.data())
def test_tensor_core_schedules_on_the_gpu(data):
    tensor_core_device_property(data, Tally())


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


def test_guard_zones_of_bytes_see_a_write_beside_the_array():
    g = Guarded((5,), np.arange(1, 6), "uint8")
    assert g.damage() is None and not g.changed()
    g.flat[g.pad + 5] ^= 0xFF
    assert g.damage() is not None


def test_random_inputs_give_packed_bytes_every_nibble_and_floats_in_their_dtype():
    """The arrays the int4 cases run on: any byte (both nibbles 0..15), and scales and zeros
    of the placeholder's dtype (the reference takes no float32 array for a bfloat16 one)."""
    wq, scale, zero = sl.packed_int4((64, 16), 8, "bfloat16")
    values = random_inputs([wq, scale, zero], {})
    packed = values[wq]
    assert packed.dtype == np.uint8
    for nibble in (packed & 15, packed >> 4):
        assert set(np.unique(nibble).tolist()) == set(range(16))
    for t in (scale, zero):
        assert values[t].dtype == dt.to_numpy("bfloat16") and (values[t] != 0).all()


def test_a_known_finding_is_counted_not_raised(monkeypatch):
    """verdict.KNOWN_FINDINGS: an error pinned by a regression test is tallied by name."""
    monkeypatch.setitem(KNOWN_FINDINGS, "test_x", re.compile(r"^tile rows straddle"))
    err = sl.LoweringError("tile rows straddle a vector")  # and says nothing to do
    assert lowering_verdict(err) == "known finding: test_x"
    with pytest.raises(FuzzFailure, match="says nothing to do"):
        lowering_verdict(sl.LoweringError("tile columns straddle a vector"))


def _reads_past_the_end() -> Case:
    a = sl.placeholder((4,), name="A")
    b = sl.compute((4,), lambda i: a[i + 1] * 2.0, name="B")
    return Case("test", [a], [b])


def test_a_read_outside_a_tensor_fails_the_fuzzer_unless_the_case_expects_it():
    """Only the int4 family's weight packed by hand reads outside a tensor: anywhere else
    the refusal is the schedule's doing (an rfactor read past the last part of a split)."""
    case = _reads_past_the_end()
    with pytest.raises(FuzzFailure, match=r"a read inside its tensor refused as outside"):
        check_cpu(case, sl.create_schedule(case.outputs), Tally())
    case.lowering_refusal = r"compute 'B' reads 'A\[i \+ 1\]' out of bounds"
    tally = Tally()
    check_cpu(case, sl.create_schedule(case.outputs), tally)
    assert tally.counts["refused when lowered"] == 1
    case.lowering_refusal = r"reads 'A\[i\]'"
    with pytest.raises(FuzzFailure, match=r"lowering refused with another reason: compute 'B'"):
        check_cpu(case, sl.create_schedule(case.outputs), Tally())


ATTENTION = Tally()


@sample(100)
@given(data=st.data())
def test_attention_schedules(data):
    """Attention's chain, masked or not, fused by online and scheduled at random: its scan at
    the loops of the output's rows (where a mask leaves steps out) or at the root."""
    cpu_property(data, ATTENTION, families=("attention",))


def test_the_attention_sample_fused_masked_chains():
    if not ATTENTION.counts:
        test_attention_schedules()
    assert ATTENTION.counts["primitive: online"] > 0
    assert ATTENTION.by_family["masked_attention"]["ran and matched"] > 0
