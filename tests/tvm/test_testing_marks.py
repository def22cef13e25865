"""TE's test decorators from ``tvm.testing``: what this machine cannot run is skipped."""

from __future__ import annotations

import schedlang.tvm as tvm
import schedlang.tvm.testing  # noqa: F401 - TE programs import it so
from schedlang.platform_info import cuda_available, cuda_devices


def _test():
    return "ran"


def _skipped(marked) -> bool:
    return any(m.name == "skipif" and m.args[0] for m in getattr(marked, "pytestmark", []))


def test_cpu_tests_run_and_gpu_tests_skip_where_there_is_no_gpu():
    assert tvm.testing.uses_gpu(_test)() == "ran"
    assert tvm.testing.requires_llvm(_test)() == "ran"
    assert _skipped(tvm.testing.requires_gpu(_test)) == (not cuda_available())
    assert _skipped(tvm.testing.requires_cuda(_test)) == (not cuda_available())
    tensor_cores = cuda_available() and any(g.compute_capability >= (7, 0) for g in cuda_devices())
    assert _skipped(tvm.testing.requires_tensorcore(_test)) == (not tensor_cores)
