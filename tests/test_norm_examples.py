"""Layer norm and RMSNorm (`examples/gpu_norm.py`): right at odd sizes in every input dtype
(the SIMT interpreter, against float64 numpy and the reference), lean in PTX at the benchmark's
shapes, and on a GPU where there is one."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_norm
from schedlang.ir.dtype import to_numpy
from tests.cuda.ptxas import assemble

# the output's own rounding (half an ulp near 1) and float32 statistics
TOLERANCE = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def _inputs(norm: gpu_norm.Norm, m: int, offset: float = 3.0, seed: int = 0) -> list[np.ndarray]:
    """Random rows about `offset` (so the mean matters) and random affine parameters."""
    rng = np.random.default_rng(seed)
    x = norm.inputs[0]
    kind = to_numpy(x.dtype)
    n = int(x.shape[1])
    rows = rng.normal(offset, 2.0, (m, n)).astype(kind)
    return [rows, *(rng.normal(size=n).astype(kind) for _ in norm.inputs[1:])]


def _layer_norm(x, w=None, b=None, eps=1e-5):
    x = x.astype(np.float64)
    centred = x - x.mean(axis=1, keepdims=True)
    y = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + eps)
    return y if w is None else y * w.astype(np.float64) + b.astype(np.float64)


def _rms_norm(x, w=None, eps=1e-6):
    x = x.astype(np.float64)
    y = x / np.sqrt((x**2).mean(axis=1, keepdims=True) + eps)
    return y if w is None else y * w.astype(np.float64)


FORMULAS = {"layer_norm": _layer_norm, "rms_norm": _rms_norm}


def _simulated(norm: gpu_norm.Norm, s: sl.Schedule, arrays, **sizes) -> np.ndarray:
    kernel = sl.build(s, norm.args, target="cuda")
    out = np.full(arrays[0].shape, np.nan, arrays[0].dtype)
    kernel.simulate(*arrays, out, **sizes)
    return out


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm"])
def test_blocks_of_rows_at_odd_sizes(kind, dtype, rows):
    """333 columns over 16 threads: several steps per thread, a ragged last step of lanes and
    of threads; 5 rows, a symbolic count, one a block or 3 (the last block short)."""
    m = sl.var("m")
    norm = getattr(gpu_norm, kind)(m, 333, dtype)
    arrays = _inputs(norm, 5)
    out = _simulated(norm, gpu_norm.schedule(norm, threads=16, rows=rows), arrays)
    got = out.astype(np.float64)
    np.testing.assert_allclose(got, FORMULAS[kind](*arrays), atol=4 * TOLERANCE[dtype])
    want = sl.reference(norm.out, dict(zip(norm.inputs, arrays)))
    np.testing.assert_allclose(got, want.astype(np.float64), atol=2 * TOLERANCE[dtype])


@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm"])
def test_without_affine_parameters_and_other_eps(kind):
    """No W (and B): the normalised rows alone; eps as given, large enough to show."""
    norm = getattr(gpu_norm, kind)(3, 100, "float32", eps=0.5, affine=False)
    assert len(norm.inputs) == 1
    arrays = _inputs(norm, 3, offset=0.0, seed=1)
    out = _simulated(norm, gpu_norm.schedule(norm, threads=32, lanes=2), arrays)
    np.testing.assert_allclose(out, FORMULAS[kind](*arrays, eps=0.5), atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_layer_norm_in_one_online_pass(dtype):
    """The statistics by Welford's one-pass form (online over blocks of 16 columns, which do
    not divide 333), far from zero: the merged squares keep float32's accuracy."""
    norm = gpu_norm.layer_norm(7, 333, dtype)
    arrays = _inputs(norm, 7, offset=300.0, seed=2)
    out = _simulated(norm, gpu_norm.online_schedule(norm, factor=16, threads=32), arrays)
    # float32's spacing at 300 is 3e-5, a 2.0 deviation: about 2e-5 of error in x - mean
    atol = 1e-4 if dtype == "float32" else 4 * TOLERANCE[dtype]
    np.testing.assert_allclose(out.astype(np.float64), _layer_norm(*arrays), atol=atol)


@pytest.mark.parametrize(
    ("kind", "n", "dtype", "threads", "rows"),
    [
        ("layer_norm", 1024, "bfloat16", 64, 1),
        ("layer_norm", 1024, "float32", 32, 8),
        ("layer_norm", 4096, "float32", 256, 1),
        ("layer_norm", 16384, "float32", 512, 1),
        ("layer_norm", 16384, "float16", 1024, 1),
        ("rms_norm", 2048, "bfloat16", 64, 4),
        ("rms_norm", 8192, "bfloat16", 256, 1),
    ],
)
def test_ptx_at_the_benchmark_shapes(kind, n, dtype, threads, rows):
    """16-byte global loads and stores, 16-byte shared reads, squares as multiplications (no
    library pow), no spills; 64 KB of rows in dynamic shared memory."""
    kernel = gpu_norm.build(kind, 4096, n, dtype, threads=threads, rows=rows)
    ptx = kernel.ptx
    for op in ("ld.global.nc.v4", "st.global.v4", "ld.shared.v4", "st.shared.v4"):
        assert op in ptx, op
    assert "pow" not in ptx and "lg2" not in ptx
    assert "st.global.b16" not in ptx and "st.global.f32" not in ptx
    report = assemble(ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    (config,) = kernel.launch_config
    staged = rows * n * to_numpy(dtype).itemsize
    assert config.block == (threads, rows, 1) and staged <= config.shared_bytes < staged + 1024
    assert config.dynamic_shared == (config.shared_bytes > 48 * 1024)


def test_a_symbolic_row_length_is_refused():
    norm = gpu_norm.layer_norm(sl.var("m"), sl.var("n"))
    with pytest.raises(ValueError, match="its length must be a constant, not 'n'"):
        gpu_norm.schedule(norm)


@pytest.mark.gpu
@pytest.mark.parametrize(("threads", "rows"), [(128, 1), (32, 4)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("kind", ["layer_norm", "rms_norm"])
def test_norms_on_the_gpu(kind, dtype, threads, rows):
    norm = getattr(gpu_norm, kind)(301, 5000, dtype)
    arrays = _inputs(norm, 301, seed=3)
    s = gpu_norm.schedule(norm, threads=threads, rows=rows)
    kernel = sl.build(s, norm.args, target="cuda")
    out = np.full(arrays[0].shape, np.nan, arrays[0].dtype)
    kernel(*arrays, out)
    got = out.astype(np.float64)
    np.testing.assert_allclose(got, FORMULAS[kind](*arrays), atol=4 * TOLERANCE[dtype])


@pytest.mark.gpu
def test_layer_norm_in_one_online_pass_on_the_gpu():
    norm = gpu_norm.layer_norm(300, 5000)
    arrays = _inputs(norm, 300, offset=300.0, seed=4)
    kernel = sl.build(gpu_norm.online_schedule(norm), norm.args, target="cuda")
    out = np.full(arrays[0].shape, np.nan, np.float32)
    kernel(*arrays, out)
    np.testing.assert_allclose(out, _layer_norm(*arrays), atol=2e-4)
