"""The tuning templates under examples/: their spaces, and points of each built for the GPU and
run by the loop-IR interpreter at odd sizes against the reference (the GPU runs them in the
GPU suite and in benchmarks/tune.py)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import tune_conv2d, tune_gemm, tune_softmax
from schedlang.display.check_data import random_array
from schedlang.loopir.interpret import run


def _check(task, values):
    s, args = task.instantiate(values)
    kernel = sl.build(s, args, target="cuda -arch=sm_90")
    rng = np.random.default_rng(5)
    inputs = {t: random_array(tuple(int(d) for d in t.shape), t.dtype, rng) for t in args[:-1]}
    out = np.full(tuple(int(d) for d in args[-1].shape), np.nan, np.float32)
    run(kernel.lowered, [*inputs.values(), out])
    np.testing.assert_allclose(out, sl.reference(args[-1], inputs), rtol=2e-5, atol=2e-5)


def test_the_gemm_template_has_the_hand_tuned_schedule_among_its_216_points():
    task = tune_gemm.gemm(45, 37, 19)
    assert len(task.space) == 216
    hand = {"block": 128, "threads": 16, "vthreads": 2, "step": 8, "double_buffer": True}
    s, args = task.instantiate(hand)
    at, b, c = args
    expected = sl.create_schedule(c.op)
    from examples import gpu_gemm

    gpu_gemm.schedule_into(expected, at, b, c)
    assert str(s) == str(expected)


@pytest.mark.parametrize(
    "values",
    [
        {"block": 64, "threads": 8, "vthreads": 2, "step": 4, "double_buffer": True},
        {"block": 64, "threads": 16, "vthreads": 4, "step": 16, "double_buffer": False},
    ],
)
def test_gemm_template_points_compute_the_product(values):
    _check(tune_gemm.gemm(45, 37, 19), values)


def test_gemm_template_refuses_pointless_tiles_as_invalid():
    task = tune_gemm.gemm(64, 64, 64)
    with pytest.raises(sl.tune.Invalid, match="16x16 accumulators per thread"):
        task.instantiate({"block": 128, "threads": 8, "vthreads": 1, "step": 8,
                          "double_buffer": False})  # fmt: skip


def test_conv_template_point_computes_the_convolution():
    task = tune_conv2d.conv2d(5, 3, 7, 5)
    assert len(task.space) == 96
    _check(task, {"tile": 2, "num_thread": 4, "vthread": 2, "step": 4})


def test_softmax_template_point_computes_the_softmax():
    task = tune_softmax.softmax(3, 77)
    assert len(task.space) == 30
    _check(task, {"threads": 64, "lanes": 2, "stage_exp": True})


def test_the_fp16_gemm_template_has_the_fastest_options_among_its_points():
    from examples import gpu_gemm_wgmma, tune_gemm_fp16

    task = tune_gemm_fp16.gemm(256, 512, 256)
    assert len(task.space) == 768
    fast = {"block_rows": 128, "block_cols": 256, "step": 64, "stages": 4, "tma": True,
            "tma_store": True, "group": 0}  # fmt: skip
    s, (a, b, c) = task.instantiate(fast)
    assert str(s) == str(gpu_gemm_wgmma.schedule(a, b, c, **gpu_gemm_wgmma.FAST))
    with pytest.raises(sl.tune.Invalid, match="exceed 227 KB"):
        task.instantiate(dict(fast, block_rows=256, stages=5))
    with pytest.raises(sl.tune.Invalid, match="no room for the staged results"):
        task.instantiate(dict(fast, block_rows=256, block_cols=192, stages=4))


def test_an_fp16_gemm_template_point_runs_on_the_simulated_tensor_cores():
    from examples import tune_gemm_fp16

    task = tune_gemm_fp16.gemm(128, 136, 128)
    s, (a, b, c) = task.instantiate({"block_rows": 64, "block_cols": 64, "step": 64,
                                     "stages": 2, "tma": False, "tma_store": False,
                                     "group": 0})  # fmt: skip
    kernel = sl.build(s, [a, b, c], target="cuda -arch=sm_90")
    rng = np.random.default_rng(2)
    x = random_array((128, 128), "float16", rng)
    y = random_array((128, 136), "float16", rng)
    z = np.full((128, 136), np.nan, np.float32)
    kernel.simulate(x, y, z)
    np.testing.assert_allclose(z, sl.reference(c, {a: x, b: y}), rtol=1e-3, atol=1e-2)


def test_the_attention_template_has_the_hand_schedule_among_its_points():
    from examples import gpu_attention, tune_attention

    task = tune_attention.attention(2, 256, 128, causal=True, multiprocessors=5)
    assert len(task.space) == 1152
    hand = {
        "rows": 128,
        "keys": 64,
        "stages": 2,
        "tma": False,
        "persistent": False,
        "overlap": False,
        "producer": False,
        "turns": False,
        "lazy": False,
    }
    s, args = task.instantiate(hand)
    tensors = gpu_attention.tensor_core_attention(2, 256, 128, causal=True)
    assert str(s) == str(gpu_attention.wgmma_schedule(*tensors))
    s, _ = task.instantiate(dict(hand, keys=128, stages=3, tma=True))
    assert str(s) == str(gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3, tma=True))
    s, _ = task.instantiate(dict(hand, keys=128, tma=True, persistent=True))
    want = gpu_attention.wgmma_schedule(*tensors, keys=128, tma=True, persistent=5)
    assert str(s) == str(want)
    s, _ = task.instantiate(dict(hand, keys=128, stages=3, tma=True, overlap=True))
    want = gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3, tma=True, overlap=True)
    assert str(s) == str(want)
    options = dict(keys=128, stages=3, tma=True, overlap=True, warp_specialize=True)
    s, _ = task.instantiate(dict(hand, keys=128, stages=3, tma=True, overlap=True, producer=True))
    assert str(s) == str(gpu_attention.wgmma_schedule(*tensors, **options))
    with pytest.raises(sl.tune.Invalid, match="with the copy engine"):
        task.instantiate(dict(hand, overlap=True))
    with pytest.raises(sl.tune.Invalid, match="producer warpgroup issues the copy engine"):
        task.instantiate(dict(hand, producer=True))
    with pytest.raises(sl.tune.Invalid, match="consumers of a producer warpgroup take turns"):
        task.instantiate(dict(hand, keys=128, stages=3, tma=True, turns=True))
    s, _ = task.instantiate(dict(hand, keys=128, stages=3, tma=True, producer=True, turns=True))
    want = dict(keys=128, stages=3, tma=True, warp_specialize=True, turns=True)
    assert str(s) == str(gpu_attention.wgmma_schedule(*tensors, **want))
    s, _ = task.instantiate(dict(hand, keys=128, stages=3, tma=True, producer=True, lazy=True))
    want = dict(keys=128, stages=3, tma=True, warp_specialize=True, threshold=8.0)
    assert str(s) == str(gpu_attention.wgmma_schedule(*tensors, **want))
    assert "threshold=8" in str(s) and "skip_unit_scales" in str(s)
    with pytest.raises(sl.tune.Invalid, match="exceed 227 KB"):
        task.instantiate(dict(hand, rows=192, keys=128, stages=3))
    with pytest.raises(sl.tune.Invalid, match="2 stages or more"):
        task.instantiate(dict(hand, stages=1, tma=True))
    with pytest.raises(sl.tune.Invalid, match="do not divide the length 192"):
        tune_attention.attention(2, 192, 64).instantiate(dict(hand, rows=64, keys=128))


def test_an_attention_template_point_runs_on_the_simulated_tensor_cores():
    from examples import tune_attention

    bh, n, d = 2, 128, 64
    task = tune_attention.attention(bh, n, d, causal=True)
    point = {
        "rows": 64,
        "keys": 128,
        "stages": 1,
        "tma": False,
        "persistent": True,
        "overlap": False,
        "producer": False,
        "turns": False,
        "lazy": True,
    }
    s, args = task.instantiate(point)  # 132 blocks for 2 tiles: the others take none
    kernel = sl.build(s, args, target="cuda -arch=sm_90a")
    rng = np.random.default_rng(3)
    q, k, v = (random_array((bh, n, d), "float16", rng) for _ in range(3))
    out = np.full((bh, n, d), np.nan, np.float16)
    kernel.simulate(q, k, v, out)
    want = sl.reference(args[-1], dict(zip(args[:3], (q, k, v))))
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), atol=4e-3)


def test_the_fp8_gemm_template_has_the_fastest_options_among_its_points():
    from examples import gpu_gemm_fp8, tune_gemm_fp8

    task = tune_gemm_fp8.gemm(256, 512, 256)
    assert len(task.space) == 768
    fast = {"block_rows": 128, "block_cols": 256, "step": 128, "stages": 4, "tma": True,
            "tma_store": True, "group": 0}  # fmt: skip
    s, (a, b, c) = task.instantiate(fast)
    assert str(s) == str(gpu_gemm_fp8.schedule(a, b, c, **gpu_gemm_fp8.FAST))
    with pytest.raises(sl.tune.Invalid, match="exceed 227 KB"):
        task.instantiate(dict(fast, block_rows=256, step=256, stages=3))


def test_an_fp8_gemm_template_point_runs_on_the_simulated_tensor_cores():
    from examples import tune_gemm_fp8

    task = tune_gemm_fp8.gemm(70, 72, 256, out_dtype="float32")
    s, (a, b, c) = task.instantiate({"block_rows": 64, "block_cols": 64, "step": 128,
                                     "stages": 2, "tma": False, "tma_store": False,
                                     "group": 0})  # fmt: skip
    kernel = sl.build(s, [a, b, c], target="cuda -arch=sm_90a")
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((70, 256)) * 2).astype("float32")
    y = (rng.standard_normal((72, 256)) * 2).astype("float32")
    from schedlang.ir import dtype as dt

    x, y = (v.astype(dt.to_numpy("float8_e4m3fn")) for v in (x, y))
    z = np.full((70, 72), np.nan, np.float32)
    kernel.simulate(x, y, z)
    np.testing.assert_allclose(z, sl.reference(c, {a: x, b: y}), rtol=1e-5, atol=1e-4)


def test_the_int4_gemm_template_has_the_example_defaults_and_computes_the_product():
    from examples import gpu_gemm_int4, tune_gemm_int4

    task = tune_gemm_int4.gemm(5, 70, 128, group=32)
    assert len(task.space) == 144
    s, args = task.instantiate({"block_rows": 16, "block_cols": 128, "threads_y": 4,
                                "step": 32})  # fmt: skip
    tensors = gpu_gemm_int4.int4_gemm(5, 70, 128, 32, "bfloat16")
    assert str(s) == str(gpu_gemm_int4.schedule(*tensors))
    with pytest.raises(sl.tune.Invalid, match="do not divide"):
        task.instantiate({"block_rows": 1, "block_cols": 64, "threads_y": 4, "step": 16})
    s, args = task.instantiate({"block_rows": 4, "block_cols": 64, "threads_y": 4, "step": 16})
    kernel = sl.build(s, args, target="cuda -arch=sm_90")
    rng = np.random.default_rng(6)
    weight = rng.standard_normal((128, 70)).astype(np.float32)
    packed, scales, zeros = gpu_gemm_int4.pack_int4(weight, 32, "bfloat16")
    x = random_array((5, 128), "bfloat16", rng)
    out = np.full((5, 70), np.nan, x.dtype)
    kernel.simulate(x, packed, scales, zeros, out)
    want = sl.reference(args[-1], dict(zip(args[:4], (x, packed, scales, zeros))))
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=1e-2)


def test_the_int4_decode_template_offers_three_kernels_and_each_computes_the_product():
    from examples import gpu_gemm_int4, tune_gemm_int4

    task = tune_gemm_int4.decode(5, 208, 256, group=32)
    assert len(task.space) == 960
    first = {"warps": 4, "stages": 2, "rows": 8, "step": 64}
    cores = {**first, "kernel": "cuda_cores", "slice_k": 64, "columns": 4, "warps": 8}
    tensor = {**first, "kernel": "tensor_cores", "slice_k": 128, "columns": 64, "stages": 3}
    registers = {**first, "kernel": "registers", "slice_k": 128, "columns": 64, "rows": 16}
    registers["step"] = 128
    tensors = gpu_gemm_int4.int4_gemm(sl.var("m"), 208, 256, 32, "bfloat16")
    made = {
        "cuda_cores": gpu_gemm_int4.decode_schedule(*tensors, slice_k=64, cols=4, warps=8, rows=5),
        "tensor_cores": gpu_gemm_int4.tensor_core_decode_schedule(
            *tensors, slice_k=128, block_cols=64, stages=3
        ),
        "registers": gpu_gemm_int4.register_decode_schedule(
            *tensors, slice_k=128, rows=16, stages=2, step=128
        ),
    }
    with pytest.raises(sl.tune.Invalid, match="has no stages knob"):
        task.instantiate(dict(cores, stages=3))
    with pytest.raises(sl.tune.Invalid, match="has no step knob"):
        task.instantiate(dict(tensor, step=128))
    with pytest.raises(sl.tune.Invalid, match="a thread's are 4 or 8"):
        task.instantiate(dict(tensor, columns=8))
    with pytest.raises(sl.tune.Invalid, match="one warpgroup's 64 columns"):
        task.instantiate(dict(registers, columns=128))
    valid = 0
    for number in range(len(task.space)):
        try:
            task.instantiate(task.space.values(number))
        except sl.tune.Invalid:
            continue
        valid += 1
    assert valid == 80
    rng = np.random.default_rng(8)
    weight = rng.standard_normal((256, 208)).astype(np.float32)
    packed, scales, zeros = gpu_gemm_int4.pack_int4(weight, 32, "bfloat16")
    x = random_array((5, 256), "bfloat16", rng)
    for point in (cores, tensor, registers):
        s, args = task.instantiate(point)
        assert str(s) == str(made[point["kernel"]])
        kernel = sl.build(s, args, target="cuda -arch=sm_90a")
        out = np.full((5, 208), np.nan, x.dtype)
        kernel.simulate(x, packed, scales, zeros, out)
        want = sl.reference(
            args[-1], dict(zip(args[:4], (x, packed, scales, zeros))), sizes={"m": 5}
        )
        np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=1e-2)
