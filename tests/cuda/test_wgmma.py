"""Warpgroup tensor cores (`examples/gpu_gemm_wgmma.py`, ``wgmma.mma_async`` on sm_90a): simulated
on the CPU with the warpgroup's accumulator layout, assembled by ptxas for sm_90a, run on a
Hopper GPU where there is one, and every way such a schedule is refused.

Inputs are random (never zeros), outputs poisoned with NaN; results are compared with the numpy
reference of the unscheduled algorithm.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm_wgmma as example
from schedlang.schedule.errors import TensorizeError

from .ptxas import assemble
from .test_tensor_cores import _close, _inputs, _runs_right

CASES = [
    # (m, n, k), operands, output, schedule options
    ((128, 128, 128), "float16", "float32", dict(block_cols=64, stages=2)),
    ((128, 256, 192), "bfloat16", "bfloat16", dict(block_cols=128, stages=3)),
    ((64, 64, 64), "float16", "float16", dict(block_rows=64, block_cols=64, stages=1)),
    ((256, 256, 256), "float16", "float32", dict(block_rows=256, stages=4)),
    ((192, 256, 128), "float16", "float32", dict(block_rows=192, block_cols=256, stages=2)),
    # the edges cut tiles along the rows and the columns: computed whole, stored within C
    ((200, 136, 128), "float16", "float32", dict(block_cols=64, stages=2)),
    ((130, 300, 64), "bfloat16", "float32", dict(block_cols=128, stages=2)),
]


def _built(shape, dtype, out, options, target="cuda"):
    a, b, c = example.gemm(*shape, dtype, out)
    kernel = sl.build(example.schedule(a, b, c, **options), [a, b, c], target=target)
    return kernel, (a, b, c)


@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_simulated_with_the_warpgroup_layout(shape, dtype, out, options):
    kernel, (a, b, c) = _built(shape, dtype, out, options)
    x, y, z = _inputs(*shape, dtype, out)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), out)


def test_the_loop_nest_and_the_ptx():
    kernel, _ = _built((256, 512, 256), "float16", "float16", {})
    text = str(kernel.lowered)
    assert "in wgmma.accumulator" in text
    assert "+= wgmma(A.shared[" in text and "= store_matrix(acc[0:+64, 0:+128])" in text
    ptx = kernel.ptx
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    # A is K-major (imm-trans-a 0), B's rows run along n (MN-major: imm-trans-b 1)
    assert "p, 1, 1, 0, 1;" in ptx
    for word in ("wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "fence.proxy.async"):
        assert word in ptx
    report = assemble(ptx)
    assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log
    assert "serialized" not in report.log  # ptxas kept the products asynchronous


def test_the_accumulators_come_back_in_a_struct_named_once():
    """Each extractvalue of a product's registers names the struct instead of printing its
    fields (64 floats at m64n128): the module LLVM parses is a fraction of the size. A
    module names its own structs only, not those of kernels built before it (m64n64's)."""
    narrow, _ = _built((128, 128, 128), "float16", "float32", dict(block_cols=64, stages=2))
    assert '%"wgmma.f32x32" = type' in narrow.llvm_ir
    kernel, _ = _built((256, 512, 256), "float16", "float16", {})
    named = re.findall(r'^%"wgmma\.f32x(\d+)" = type \{(.*)\}$', kernel.llvm_ir, re.M)
    assert named == [("64", ", ".join(["float"] * 64))]
    assert "extractvalue {float" not in kernel.llvm_ir
    assert kernel.llvm_ir.count('extractvalue %"wgmma.f32x64"') >= 64
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in kernel.ptx


def test_a_warpgroup_with_no_rows_at_the_edge_keeps_the_products_asynchronous():
    """At the last block row a warpgroup may have no rows: its products sit under a branch on
    threadIdx.z, which ptxas must know is uniform in each warp, or it serialises them all."""
    kernel, _ = _built((1000, 512, 256), "float16", "float32", {})
    assert "shfl.sync.idx" in kernel.ptx
    report = assemble(kernel.ptx)
    assert "serialized" not in report.log, report.log


def test_only_hopper_runs_it():
    a, b, c = example.gemm(128, 128, 64)
    s = example.schedule(a, b, c, block_cols=64, stages=2)
    with pytest.raises(sl.LoweringError, match=r"only Hopper GPUs run \(sm_90a\).*sm_80"):
        sl.build(s, [a, b, c], target="cuda -arch=sm_80")


def test_intrinsic_arguments_are_checked():
    with pytest.raises(ValueError, match="multiple of 8 from 8 to 256"):
        sl.intrin.wgmma(n=12)
    with pytest.raises(ValueError, match="m must be 16, 32 or 8 .a warp's tile. or 64"):
        sl.intrin.store_matrix(n=64, m=48)
    with pytest.raises(ValueError, match="m=32 is the m32n8k16 tile: n=8, not n=64"):
        sl.intrin.store_matrix(n=64, m=32)
    assert repr(sl.intrin.wgmma(n=64)) == "sl.intrin.wgmma(n=64)"
    assert repr(sl.intrin.store_matrix(n=64, m=64)) == "sl.intrin.store_matrix(n=64, m=64)"


def _mini(swizzle=True, warps=4, bind_group_warps=False):
    """A 128 x 64 x 64 GEMM, one warpgroup, with one thing changed from what wgmma needs."""
    a, b, c = example.gemm(64, 64, 64)
    s = sl.create_schedule(c.op)
    shared = [s.cache_read(t, "shared", [c]) for t in (a, b)]
    acc = s.cache_write(c, "wgmma.accumulator")
    i, j = c.op.axis
    s[c].tensorize(i, sl.intrin.store_matrix(n=64, m=64))
    fi, fj = s[acc].op.axis
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=16)
    s[acc].reorder(ko, fi, fj, ki)
    s[acc].tensorize(fi, sl.intrin.wgmma(n=64))
    if bind_group_warps:
        s[acc].bind(ko, sl.thread_axis("threadIdx.y"))
    for staged in shared:
        if swizzle:
            s[staged].swizzle(128)
        fused = s[staged].fuse(*s[staged].op.axis)
        rest, lanes = s[staged].split(fused, factor=8)
        rest, tx = s[staged].split(rest, factor=32)
        _, ty = s[staged].split(rest, factor=warps)
        s[staged].bind(tx, sl.thread_axis("threadIdx.x"))
        s[staged].bind(ty, sl.thread_axis("threadIdx.y"))
        s[staged].vectorize(lanes)
    return s, [a, b, c]


def test_the_mini_schedule_is_right():
    s, (a, b, c) = _mini()
    kernel = sl.build(s, [a, b, c], target="cuda")
    x, y, z = _inputs(64, 64, 64, "float16", "float32")
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), "float32")


def test_operands_must_be_swizzled():
    s, args = _mini(swizzle=False)
    with pytest.raises(TensorizeError, match=r"swizzled layout; ask for it with .*swizzle\(128\)"):
        sl.lower(s, args)


def test_the_warps_of_a_group_cannot_be_bound():
    s, args = _mini(bind_group_warps=True)
    with pytest.raises(TensorizeError, match="threadIdx.y is the warp of the warpgroup"):
        sl.lower(s, args)


def test_the_block_needs_four_warps_in_y():
    s, args = _mini(warps=2)
    with pytest.raises(TensorizeError, match="needs threadIdx.y of extent 4"):
        sl.lower(s, args)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_on_the_gpu(shape, dtype, out, options):
    _runs_right(_built, shape, dtype, out, options)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("shape", [(1024, 768, 512), (1000, 1000, 320)])
def test_on_the_gpu_at_a_size_of_many_blocks(shape):
    kernel, (a, b, c) = _built(shape, "float16", "float32", {})
    x, y, z = _inputs(*shape, "float16", "float32", seed=11)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), "float32")


CONV_CASES = [
    # (height, width, batch, in, out), output, schedule options
    ((4, 4, 128, 128, 128), "float16", {}),
    ((5, 3, 64, 64, 64), "float32", dict(block_rows=64, block_cols=64, stages=2)),
    ((3, 6, 128, 128, 64), "float16", dict(block_cols=64, stages=4)),
    # 5 persistent blocks take the 24 tiles in turn (5, 5, 5, 5, 4)
    ((3, 4, 128, 64, 128), "float16", dict(block_cols=64, stages=3, persistent=5)),
]


def _conv(shape, out, options, seed):
    from examples import gpu_conv2d_wgmma as conv_example

    a, w, c = conv_example.conv2d(*shape, out_dtype=out)
    kernel = sl.build(conv_example.schedule(a, w, c, **options), [a, w, c], target="cuda")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, [int(d) for d in a.shape]).astype(np.float16)
    y = rng.uniform(-1.0, 1.0, [int(d) for d in w.shape]).astype(np.float16)
    z = np.full([int(d) for d in c.shape], np.nan, np.dtype(out))
    return kernel, (a, w, c), (x, y, z)


@pytest.mark.parametrize(("shape", "out", "options"), CONV_CASES)
def test_a_convolution_as_an_implicit_gemm_simulated(shape, out, options):
    """The padding inlined into the data's pipelined copy: rows outside the image are copied
    as zeros (cp.async's zero fill), nothing padded is written."""
    kernel, (a, w, c), (x, y, z) = _conv(shape, out, options, seed=2)
    assert "else zeros" in str(kernel.lowered)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), out)
    # the zero fill: cp.async with a source size operand
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16, %r", kernel.ptx)
    report = assemble(kernel.ptx)
    assert report.stack_bytes == 0 and "serialized" not in report.log, report.log


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "out", "options"), CONV_CASES)
def test_a_convolution_on_the_gpu(shape, out, options):
    kernel, (a, w, c), (x, y, z) = _conv(shape, out, options, seed=7)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), out)


def test_group_and_persistent_together_are_refused_before_placement():
    a, b, c = example.gemm(256, 512, 128)
    with pytest.raises(ValueError, match="group and persistent"):
        example.schedule(a, b, c, tma=True, group=2, persistent=4)


def test_a_persistent_gemm_keeps_what_its_tiles_share_hoisted():
    """The hint that keeps LLVM from hoisting out of a loop of tiles is for a loop around
    steps that do more than products (attention's softmax): a GEMM's steps are products,
    waits and copies, and its tile loop is left to LLVM as before."""
    kernel = example.build(1000, 1024, 1024, tma=True, persistent=7)
    tiles = str(kernel.lowered).index("for i.outer.j.outer.fused.outer in range(")
    assert tiles < str(kernel.lowered).index("for k.outer in range(")  # the steps in the tiles
    assert "llvm.licm.disable" not in kernel.llvm_ir
