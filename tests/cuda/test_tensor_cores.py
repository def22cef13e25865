"""Tensor-core schedules (`examples/gpu_gemm_fp16.py`) end to end: simulated on the CPU with the
hardware's fragment layouts, assembled by ptxas, and run on a GPU where there is one.

Inputs are random (never zeros), outputs poisoned with NaN; results are compared with the
numpy reference of the unscheduled algorithm, within half-precision rounding of the output.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm_fp16 as example

from .ptxas import assemble

SMALL = dict(block_rows=64, block_cols=64, warp_rows=32, warp_cols=32, step=32)
CASES = [
    # (m, n, k), operands, output, schedule options
    ((64, 64, 64), "float16", "float32", SMALL),
    ((96, 64, 48), "bfloat16", "float32", dict(SMALL, block_cols=32, warp_cols=16, step=16)),
    ((128, 192, 96), "float16", "float16", SMALL),
    ((256, 128, 64), "bfloat16", "bfloat16", {}),
    # sizes that are not multiples of the 16 x 16 tiles along the rows and columns
    ((45, 37, 32), "float16", "float32", SMALL),
    ((77, 88, 48), "bfloat16", "bfloat16", dict(SMALL, step=16)),
    ((200, 136, 96), "float16", "float16", {}),
    # the shared tiles swizzled instead of padded
    ((128, 192, 96), "float16", "float16", dict(SMALL, layout="swizzle")),
    ((256, 128, 128), "bfloat16", "float32", dict(layout="swizzle")),
]
NUMPY = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def _inputs(m, n, k, dtype, out, seed=3):
    rng = np.random.default_rng(seed)
    magnitude = rng.uniform(0.5, 2.0, (2, max(m, n), k))
    sign = np.where(rng.random(magnitude.shape) < 0.5, -1.0, 1.0)
    values = (magnitude * sign).astype(NUMPY[dtype])
    a, b = values[0, :m], values[1, :n].T.copy()
    return a, b, np.full((m, n), np.nan, NUMPY[out])


def _built(shape, dtype, out, options, target="cuda"):
    a, b, c = example.gemm(*shape, dtype, out)
    kernel = sl.build(example.schedule(a, b, c, **options), [a, b, c], target=target)
    return kernel, (a, b, c)


def _close(got, want, out):
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}[out]
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert not np.isnan(got).any(), "some outputs were never written"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def _runs_right(built, shape, dtype, out, options, seed=5):
    """The GEMM kernel `built` makes of `options` computes the reference on the GPU."""
    kernel, (a, b, c) = built(shape, dtype, out, options)
    x, y, z = _inputs(*shape, dtype, out, seed=seed)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), out)


def _tf32_reference(x, y):
    from schedlang.loopir.interpret.matrix import tf32

    return tf32(x).astype(np.float64) @ tf32(y).astype(np.float64)


TF32 = [((64, 64, 64), SMALL), ((77, 88, 48), dict(SMALL, step=16)), ((256, 256, 128), {})]


@pytest.mark.parametrize(("shape", "options"), TF32)
def test_float32_as_tf32_when_asked(shape, options):
    """float32 data on the tensor cores only with tf32=True, each operand rounded to TF32
    (nearest, ties away) and summed in float32; without it, a clear refusal."""
    a, b, c = example.gemm(*shape, "float32", "float32")
    with pytest.raises(sl.ScheduleError, match="multiply only as TF32"):
        sl.lower(example.schedule(a, b, c, **options), [a, b, c])
    kernel = sl.build(example.schedule(a, b, c, tf32=True, **options), [a, b, c], "cuda")
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in kernel.ptx
    # A's 16 x 8 float32 tiles through ldmatrix (8 x 4 floats a matrix: TF32's own layout)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in kernel.ptx
    x, y, z = _inputs(*shape, "float32", "float32")
    kernel.simulate(x, y, z)
    want = _tf32_reference(x, y)
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert assemble(kernel.ptx).stack_bytes == 0


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "options"), TF32)
def test_tf32_on_the_gpu(shape, options):
    a, b, c = example.gemm(*shape, "float32", "float32")
    kernel = sl.build(example.schedule(a, b, c, tf32=True, **options), [a, b, c], "cuda")
    x, y, z = _inputs(*shape, "float32", "float32", seed=9)
    kernel(x, y, z)
    want = _tf32_reference(x, y)
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_simulated_with_the_hardware_fragment_layouts(shape, dtype, out, options):
    kernel, (a, b, c) = _built(shape, dtype, out, options)
    x, y, z = _inputs(*shape, dtype, out)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), out)


def test_a_symbolic_number_of_rows():
    """Rows cut by the edge of the matrix, whatever its size: the last tiles are computed whole
    in the fragments and stored only where they lie inside C."""
    a, b, c = example.gemm(sl.var("m"), 64, 32)
    kernel = sl.build(example.schedule(a, b, c, **SMALL), [a, b, c], target="cuda")
    assert "within C" in str(kernel.lowered)
    for m in (13, 64, 70):
        x, y, z = _inputs(m, 64, 32, "float16", "float32", seed=m)
        kernel.simulate(x, y, z)
        _close(z, sl.reference(c, {a: x, b: y}), "float32")


def test_ptx_uses_the_tensor_cores_and_keeps_fragments_in_registers():
    kernel, _ = _built((256, 256, 128), "float16", "float16", {})
    ptx = kernel.ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    report = assemble(ptx)
    assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log


def test_bfloat16_ptx_assembles():
    kernel, _ = _built((128, 128, 64), "bfloat16", "bfloat16", SMALL)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in kernel.ptx
    assemble(kernel.ptx)


def test_a_tensorized_schedule_cannot_run_on_the_cpu():
    with pytest.raises(sl.LoweringError, match="tensor-core instructions run on a CUDA GPU"):
        _built((64, 64, 64), "float16", "float32", SMALL, target="cpu")


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_on_the_gpu(shape, dtype, out, options):
    _runs_right(_built, shape, dtype, out, options)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_on_the_gpu_at_a_size_of_many_blocks():
    shape = (1024, 768, 512)
    kernel, (a, b, c) = _built(shape, "float16", "float32", {})
    x, y, z = _inputs(*shape, "float16", "float32", seed=11)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), "float32")


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_torch_bfloat16_tensors_are_used_in_place():
    """torch names bfloat16 only through DLPack (its __cuda_array_interface__ says raw bytes)."""
    torch = pytest.importorskip("torch")
    kernel, _ = _built((128, 128, 64), "bfloat16", "bfloat16", SMALL)
    x = torch.randn(128, 64, device="cuda").to(torch.bfloat16)
    y = torch.randn(64, 128, device="cuda").to(torch.bfloat16)
    z = torch.full((128, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    kernel(x, y, z)
    want = (x.double() @ y.double()).cpu().numpy()
    _close(z.float().cpu().numpy(), want, "bfloat16")


CONV = dict(block_row_warps=2, block_col_warps=2, warp_row_tiles=1, warp_col_tiles=2)


def _conv(batch, size, cin, cout, seed, swizzle=False):
    from examples import gpu_conv2d_fp16 as conv_example

    a, w, c = conv_example.conv2d(batch, size, size, cin, cout)
    s = conv_example.schedule(a, w, c, swizzle=swizzle, **CONV)
    kernel = sl.build(s, [a, w, c], target="cuda")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, [int(d) for d in a.shape]).astype(np.float16)
    y = rng.uniform(-1.0, 1.0, [int(d) for d in w.shape]).astype(np.float16)
    z = np.full([int(d) for d in c.shape], np.nan, np.float32)
    return kernel, (a, w, c), (x, y, z)


def test_te_opt_conv_tensorcore_recipe_simulated():
    """TE's opt_conv_tensorcore schedule (its layout, its primitives, fewer warps): the
    padding inlined into the shared copy of the data, fragments per kernel column."""
    kernel, (a, w, c), (x, y, z) = _conv(32, 5, 32, 64, seed=1)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), "float32")
    report = assemble(kernel.ptx)
    assert report.stack_bytes == 0, report.log


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("swizzle", [False, True])
def test_te_opt_conv_tensorcore_recipe_on_the_gpu(swizzle):
    kernel, (a, w, c), (x, y, z) = _conv(32, 7, 64, 64, seed=2, swizzle=swizzle)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), "float32")
