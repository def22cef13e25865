"""AutoTVM's ``register_topi_compute`` and ``register_topi_schedule`` as TOPI's x86 templates
use them: the compute and the schedule of one workload share a fallback configuration, which
the compute's defaults fill in; and the ``tvm.contrib`` libraries schedlang does not link."""

from __future__ import annotations

import pytest

import schedlang.tvm as tvm
from schedlang.errors import LoweringError
from schedlang.tune.knobs import TuneError
from schedlang.tvm import autotvm, te
from schedlang.tvm.autotvm.task import DispatchContext, get_workload
from schedlang.tvm.autotvm.task.space import SplitEntity
from schedlang.tvm.contrib import cublas, cudnn, dnnl, mkl
from schedlang.tvm.cpu_options import host_features
from schedlang.tvm.target.codegen import target_has_features
from schedlang.tvm.target.x86 import get_simd_32bit_lanes

from .topi_check import check, random

SEEN = []


@autotvm.register_topi_compute("tests/dense.x86")
def dense(cfg, data, weight):
    """A dense layer in TOPI's manner: the reduction split by the configuration's tile."""
    M, K = (int(n) for n in data.shape)
    N = int(weight.shape[0])
    cfg.define_split("tile_y", M, num_outputs=3)
    cfg.define_split("tile_k", K, num_outputs=2)
    if cfg.is_fallback:
        cfg.fallback_split("tile_y", [-1, 2, 2])
        cfg["tile_k"] = SplitEntity([K // 3, 3])
    SEEN.append(cfg)
    k = te.reduce_axis((0, K), "k")
    return te.compute((M, N), lambda i, j: te.sum(data[i, k] * weight[j, k], axis=k), tag="dense")


@autotvm.register_topi_schedule("tests/dense.x86")
def schedule_dense(cfg, outs):
    SEEN.append(cfg)
    C = outs[0]
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    yo, ym, yi = cfg["tile_y"].apply(s, C, y)
    ko, ki = cfg["tile_k"].apply(s, C, k)
    s[C].reorder(yo, ko, ym, yi, ki, x)
    s[C].vectorize(x)
    return s


def test_compute_and_schedule_share_the_fallback_config():
    SEEN.clear()
    X, W = te.placeholder((12, 9), name="X"), te.placeholder((7, 9), name="W")
    x, w = random((12, 9)), random((7, 9), seed=1)
    with tvm.target.Target("llvm"):
        C = dense(X, W)
        s = schedule_dense([C])
    assert C.op.tag == "dense"
    assert C.op.attrs["workload"] == (
        "tests/dense.x86",
        ("TENSOR", (12, 9), "float32"),
        ("TENSOR", (7, 9), "float32"),
    )
    assert get_workload([C]) == C.op.attrs["workload"]
    cfg, again = SEEN
    assert cfg is again and cfg.is_fallback
    assert cfg["tile_y"].size == [3, 2, 2] and cfg["tile_k"].size == [3, 3]
    check(C, [X, W], [x, w], x @ w.T, schedule=s, rtol=1e-4, atol=1e-5)


def test_a_workload_is_keyed_by_shapes_and_target():
    SEEN.clear()
    with tvm.target.Target("llvm"):
        dense(te.placeholder((5, 6), name="X"), te.placeholder((3, 6), name="W"))
        dense(te.placeholder((5, 6), name="Y"), te.placeholder((3, 6), name="V"))
        dense(te.placeholder((5, 9), name="X"), te.placeholder((3, 9), name="W"))
    first, same, other = SEEN
    assert first is same and first is not other
    assert first["tile_y"].size == [5, 1, 1]  # 5 has no divisor of at most 2 but 1


def test_registration_errors():
    X, W = te.placeholder((4, 3), name="X"), te.placeholder((2, 3), name="W")
    with pytest.raises(TuneError, match="by position"):
        dense(X, weight=W)
    plain = te.compute((4,), lambda i: X[i, 0] * 2, name="plain")
    with pytest.raises(TuneError, match="cannot find TOPI workload tests/dense.x86"):
        schedule_dense([plain])


def test_the_root_context_is_the_fallback_one():
    config = DispatchContext.current.query("llvm", ("tests/none", 1))
    assert config.is_fallback
    assert DispatchContext.current.query("llvm", ("tests/none", 1)) is config
    assert not autotvm.GLOBAL_SCOPE.in_tuning


def test_unlinked_libraries_refuse_every_call():
    A, B = te.placeholder((4, 3), name="A"), te.placeholder((3, 5), name="B")
    with pytest.raises(LoweringError, match="oneDNN .DNNL. is not available"):
        dnnl.matmul(A, B)
    with pytest.raises(LoweringError, match="dnnl_conv2d: oneDNN"):
        dnnl.dnnl_conv2d(A, B, 1, 0, 1, 1, False, "float32")
    with pytest.raises(LoweringError, match="Intel MKL is not available"):
        mkl.batch_matmul(A, B)
    with pytest.raises(LoweringError, match=r"cublas.matmul: cuBLAS is not available.*topi.cuda"):
        cublas.matmul(A, B, False, False)
    assert not cudnn.exists()  # TOPI asks before choosing cuDNN
    with pytest.raises(LoweringError, match="cudnn.softmax: cuDNN is not available"):
        cudnn.softmax(A, -1)


def test_cpu_features_are_the_hosts():
    features = host_features()
    assert target_has_features("sse2") == features.get("sse2", False)
    assert target_has_features(["avx2", "not-a-feature"]) is False
    lanes = get_simd_32bit_lanes()
    if features.get("avx512f") and features.get("avx512bw"):
        assert lanes == 16
    else:
        assert lanes == (8 if features.get("avx2") else 4)
