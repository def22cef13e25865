"""What TE code reads of a `tvm.target.Target`: its dispatch keys (TOPI picks a schedule by
them), its limits and options as TE's attributes, with the target kind's defaults."""

from __future__ import annotations

import pytest

import schedlang.tvm as tvm
from schedlang.errors import LoweringError


def test_a_cuda_target_has_tes_defaults_and_its_options():
    t = tvm.target.Target("cuda -arch=sm_90 -max_shared_memory_per_block=49152 -model=h100")
    assert t.keys == ("cuda", "gpu")
    assert (t.max_num_threads, t.thread_warp_size) == (1024, 32)
    assert t.max_shared_memory_per_block == 49152
    assert (t.arch, t.model, t.mcpu) == ("sm_90", "h100", "")
    assert t.attrs["arch"] == "sm_90"
    assert tvm.target.Target("cuda -max_num_threads=512").max_num_threads == 512


def test_an_llvm_target_has_the_cpu_key_and_names_its_options():
    t = tvm.target.Target("llvm -keys=arm_cpu,cpu -model=x1")
    assert t.keys == ("arm_cpu", "cpu")  # given keys first, the kind's after, once each
    assert (t.model, t.mattr, t.libs) == ("x1", [], [])
    assert tvm.target.Target("llvm").keys == ("cpu",)


def test_a_limit_the_kind_does_not_define_is_named():
    with pytest.raises(LoweringError, match="no max_num_threads: it is a GPU's limit"):
        _ = tvm.target.Target("llvm").max_num_threads
    with pytest.raises(LoweringError, match="-max_shared_memory_per_block=..."):
        _ = tvm.target.Target("cuda").max_shared_memory_per_block


def test_the_current_target_answers_for_topis_dispatch():
    with tvm.target.Target("cuda -arch=sm_80"):
        current = tvm.target.Target.current(allow_none=False)
        assert "gpu" in current.keys and current.thread_warp_size == 32
