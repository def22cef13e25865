"""The tensor-core family's own machinery, checked apart from the sample in test_fuzz: the
mirrored schedule is the example's until a defect is asked for, each defect is refused, the
16-bit guard zones see what the float32 ones see, and the GPU property's arguments reach the
launch (through a fake driver: the property itself runs where there is a GPU)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm_fp16 as example
from tests.cuda.fake_driver import FakeDriver, install

from .guards import PAD_BYTES, DeviceGuarded, Guarded
from .tensor_core_schedule import Defect, schedule_with
from .tensor_cores import TensorCoreCase, check, simulate, tf32
from .verdict import Tally

OPTIONS = dict(block_rows=32, block_cols=64, warp_rows=16, warp_cols=32, step=32)


@pytest.mark.parametrize(
    ("dtype", "out_dtype", "variant"),
    [
        ("float16", "float32", dict(stages=3)),
        ("bfloat16", "bfloat16", dict(stages=0, layout="pad")),
        ("float32", "float32", dict(stages=2, tf32=True)),
    ],
)
def test_the_mirror_without_a_defect_is_the_example(dtype, out_dtype, variant):
    """The defects are one change each only if the mirror is otherwise the example (which
    its authors keep improving: this says when the mirror must follow)."""
    options = dict(OPTIONS, double_buffer=True, **variant)
    a, b, c = example.gemm(48, 64, 96, dtype, out_dtype)
    mirrored = sl.lower(schedule_with(Defect(), a, b, c, **options), [a, b, c])
    a, b, c = example.gemm(48, 64, 96, dtype, out_dtype)
    assert str(mirrored) == str(sl.lower(example.schedule(a, b, c, **options), [a, b, c]))


DEFECTIVE = [
    ((64, 64, 64), {}, Defect("mma tile 8", mma_tile=8)),
    ((64, 64, 64), {}, Defect("store tile 8", store_tile=8)),
    (
        (64, 64, 64),
        {},
        Defect("A as matrix_b", a_scope="wmma.matrix_b", a_intrinsic="wmma.matrix_b"),
    ),
    ((64, 64, 64), {}, Defect("accumulator in local", acc_scope="local")),
    ((64, 64, 64), {}, Defect("16 lanes", lanes=16)),
    ((64, 64, 64), {"tf32": True}, Defect("float16 as TF32")),
    ((64, 64, 64), {"stages": 3}, Defect("2-byte copy", vector=1)),
    ((64, 64, 96), {"step": 24}, None),
    ((64, 64, 40), {}, None),
]


@pytest.mark.parametrize(
    ("shape", "options", "defect"),
    DEFECTIVE,
    ids=lambda x: x.name if isinstance(x, Defect) else None,
)
def test_each_defect_is_refused(shape, options, defect):
    case = TensorCoreCase(shape, "float16", "float32", dict(OPTIONS, **options), defect)
    tally = Tally()
    check(case, tally, simulate)
    assert "ran and matched" not in tally.counts, case.describe()
    assert sum(tally.counts.values()) == 2  # the family, and one refusal


@pytest.mark.parametrize(
    ("dtype", "out_dtype", "variant"),
    [("bfloat16", "bfloat16", dict(stages=2)), ("float32", "float32", dict(tf32=True))],
)
def test_the_example_runs(dtype, out_dtype, variant):
    case = TensorCoreCase((48, 64, 96), dtype, out_dtype, dict(OPTIONS, **variant))
    tally = Tally()
    check(case, tally, simulate, seed=7)
    assert tally.counts["ran and matched"] == 1


def test_tf32_rounds_to_nearest_ties_away():
    ulp = 2.0**-10  # of TF32 at 1.0
    x = np.array([1 + ulp / 2, 1 + ulp / 2 - 2**-23, -(1 + ulp / 2), 1 + 3 * ulp / 2], np.float32)
    np.testing.assert_array_equal(tf32(x), [1 + ulp, 1, -(1 + ulp), 1 + 2 * ulp])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_guard_zones(dtype):
    g = Guarded((3, 5), None, dtype)
    assert g.view.ctypes.data % 16 == 0 and g.view.flags.c_contiguous
    assert np.isnan(g.flat[: g.pad].astype(np.float32)).all()  # sentinels are NaNs too
    assert g.damage() is None and not g.changed()
    g.flat[g.pad + g.view.size] = np.nan  # NaN poison one element too far is still seen
    assert g.damage() is not None
    g = Guarded((2,), np.ones(2), dtype)
    g.view[0] = 2.0
    assert g.changed() and g.damage() is None


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_device_windows_reach_the_launch(monkeypatch, dtype):
    """The windows (an array interface, or a DeviceArray for bfloat16) pass the kernel's
    argument checks and are launched in place, without copies."""
    fake = FakeDriver(parameters=3)
    install(monkeypatch, fake)
    a = sl.placeholder((4, 8), dtype, name="A")
    b = sl.placeholder((4, 8), dtype, name="B")
    c = sl.compute((4, 8), lambda i, j: a[i, j] + b[i, j], name="C")
    s = sl.create_schedule(c)
    s[c].bind(c.op.axis[0], sl.thread_axis("blockIdx.x"))
    s[c].bind(c.op.axis[1], sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [a, b, c], target="cuda")
    numpy_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    placed = [DeviceGuarded(Guarded((4, 8), np.ones((4, 8), numpy_dtype), dtype)) for _ in "ab"]
    placed.append(DeviceGuarded(Guarded((4, 8), None, dtype)))
    kernel(*[p.window for p in placed])
    assert fake.launched == [tuple(p.memory.ptr + PAD_BYTES for p in placed)]
    assert fake.names().count("cuMemcpyHtoD") == 3  # the guarded buffers only
