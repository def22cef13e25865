"""The tuner on the GPU: kernels compiled for the GPU's architecture in compile processes that
never start CUDA, assembled there where ptxas is installed, checked and timed on the device;
and on a Dask cluster of one worker per GPU."""

from __future__ import annotations

import pytest

import schedlang as sl
from examples import tune_gemm
from tests.tune import templates

pytestmark = pytest.mark.gpu


def test_tuning_a_gemm_on_the_gpu_finds_a_correct_schedule(tmp_path):
    task = tune_gemm.gemm(197, 133, 61)
    log = sl.tune.run(task, target="cuda", search="random", trials=16, workers=4,
                      log=tmp_path / "log.jsonl", progress=False)  # fmt: skip
    assert len(log) == 16
    assert log.counts()["ok"] >= 1 and log.counts()["wrong"] == 0
    assert all(t.target.startswith("cuda -arch=sm_") for t in log)
    best = sl.tune.load(tmp_path / "log.jsonl").best()
    import numpy as np

    kernel = best.build()
    rng = np.random.default_rng(0)
    at = rng.standard_normal((61, 197)).astype(np.float32)
    b = rng.standard_normal((61, 133)).astype(np.float32)
    c = np.full((197, 133), np.nan, np.float32)
    kernel(at, b, c)
    np.testing.assert_allclose(c, at.T @ b, rtol=1e-4, atol=1e-4)


def test_a_wrong_gpu_kernel_is_a_finding(tmp_path):
    with pytest.warns(sl.SchedlangWarning, match="output B is off by"):
        log = sl.tune.run(templates.gpu_scale(1001), target="cuda", search="grid", workers=2,
                          log=tmp_path / "log.jsonl", progress=False)  # fmt: skip
    assert {t.knobs["wrong"]: t.status for t in log} == {False: "ok", True: "wrong"}
    assert not log.best().knobs["wrong"]


def test_a_local_cuda_cluster_measures_on_its_gpus(tmp_path):
    pytest.importorskip("dask_cuda")
    log = sl.tune.run(templates.gpu_scale(777), target="cuda", search="grid", workers=2,
                      cluster="local", log=tmp_path / "log.jsonl", progress=False)  # fmt: skip
    assert len(log) == 6 and log.counts()["ok"] == 3
    assert all(t.device.endswith(")") for t in log)
