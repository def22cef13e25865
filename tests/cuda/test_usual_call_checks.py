"""The usual call's checks (`runtime.usual_calls`: Python written per kernel and kind of array)
and its launcher (`codegen.cpu.launcher`), without a GPU: ``sl`` device arrays on the recording
`fake_driver`, tensor-like stand-ins for torch's checks, and the launcher calling a recorder in
the driver's place. Every call the usual path declines must reach the general path's error."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.cpu import launcher
from schedlang.runtime import usual_calls

from .fake_driver import FakeDriver, install
from .kernels import vector_add


def test_the_launcher_hands_each_word_of_the_table_to_the_driver():
    seen = []
    signature = ctypes.CFUNCTYPE(
        ctypes.c_int32, ctypes.c_uint64, *[ctypes.c_uint32] * 7, *[ctypes.c_uint64] * 3
    )

    @signature
    def driver(*args):
        seen.append(args)
        return 719 if len(seen) > 1 else 0  # then an error code, handed back as it is

    address = ctypes.cast(driver, ctypes.c_void_p).value
    words = launcher.table(address, 1 << 40, (70000, 3, 2), (128, 4, 1), 50000, 1 << 33)
    words[launcher.STREAM] = (1 << 47) + 5
    _, go = launcher.launcher()
    assert go(ctypes.addressof(words)) == 0
    assert seen == [(1 << 40, 70000, 3, 2, 128, 4, 1, 50000, (1 << 47) + 5, 1 << 33, 0)]
    assert go(ctypes.addressof(words)) == 719


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver(parameters=4)
    install(monkeypatch, driver)
    return driver


def _kernel():
    s, inputs, outputs = vector_add(factor=32)
    return sl.build(s, inputs + outputs, target="cuda")


def test_sl_arrays_take_the_usual_call_after_the_first(fake):
    kernel = _kernel()
    a, b, c = (sl.empty((100,)) for _ in range(3))
    kernel(a, b, c)  # the general path, which sets the usual call up
    assert kernel._usual is not None
    before = len(fake.launched)
    kernel(a, b, c)
    launches = [call for call in fake.calls if call.name == "cuLaunchKernel"]
    assert launches[-1].args[1:5] == ((4, 1, 1), (32, 1, 1), 0, 0)  # grid, block, shared, stream
    assert fake.launched[before:] == [(a.ptr, b.ptr, c.ptr, 100)]
    assert fake.names()[-1] == "cuStreamSynchronize"  # the legacy stream is waited for
    kernel(a, b, c, stream=77)  # a stream of the caller's: not waited for
    assert fake.names()[-1] == "cuLaunchKernel" and fake.calls[-1].args[4] == 77


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda a, b, c: (a, b, sl.empty((99,))), ValueError, "dimension 0 of 'C'"),
        (lambda a, b, c: (a, b, sl.empty((100,), "float64")), TypeError, "float32"),
        (lambda a, b, c: (a, b, sl.empty((10, 10))), ValueError, r"1 dimension\(s\)"),
        (lambda a, b, c: (a, b, a), ValueError, "overlaps"),
        (lambda a, b, c: (a, b, c, a), TypeError, "takes 3 arrays"),
    ],
    ids=["shape", "dtype", "rank", "overlap", "count"],
)
def test_what_the_usual_call_declines_gets_the_general_paths_error(fake, make, error, match):
    kernel = _kernel()
    a, b, c = (sl.empty((100,)) for _ in range(3))
    kernel(a, b, c)
    launched = len(fake.launched)
    with pytest.raises(error, match=match):
        kernel(*make(a, b, c))
    assert len(fake.launched) == launched


class Tensor:
    """What the usual call reads of a torch tensor."""

    def __init__(self, ptr, shape, dtype="f32", device=0, contiguous=True, grad=False):
        self.ptr, self.shape, self.dtype = ptr, tuple(shape), dtype
        self.device, self.contiguous, self.requires_grad = device, contiguous, grad

    def data_ptr(self):
        return self.ptr

    def get_device(self):
        return self.device

    def is_contiguous(self):
        return self.contiguous


def _torch_call(fake, symbolic=True):
    s, inputs, outputs = vector_add(n=None if symbolic else 100, factor=32)
    kernel = sl.build(s, inputs + outputs, target="cuda")
    fake.parameters = 4 if symbolic else 3
    x = np.zeros(100, np.float32)
    kernel(x, x.copy(), x.copy())  # the general path sets the usual call up
    usual = kernel._usual
    return usual, usual._compile("torch", Tensor, ["f32"] * 3, lambda ordinal: 5)


@pytest.mark.parametrize("symbolic", [True, False])
def test_tensors_that_fit_are_launched_on_the_current_stream(fake, symbolic):
    _, call = _torch_call(fake, symbolic)
    params = (1024, 2048, 4096, 100) if symbolic else (1024, 2048, 4096)
    fake.parameters = len(params)
    before = len(fake.launched)
    assert call((Tensor(1024, (100,)), Tensor(2048, (100,)), Tensor(4096, (100,))), None)
    assert fake.launched[before:] == [params]
    assert fake.calls[-1].name == "cuLaunchKernel" and fake.calls[-1].args[4] == 5


A, B, C = 1024, 2048, 4096


@pytest.mark.parametrize(
    "arrays",
    [
        (Tensor(A, (100,)), Tensor(B, (100,)), Tensor(C, (99,))),  # a size that disagrees
        (Tensor(A, (100,)), Tensor(B, (100,), "f64"), Tensor(C, (100,))),  # a dtype
        (Tensor(A, (100,)), Tensor(B, (100,), device=1), Tensor(C, (100,))),  # another GPU
        (Tensor(A, (100,)), Tensor(B, (100,), contiguous=False), Tensor(C, (100,))),
        (Tensor(A, (100,)), Tensor(B + 4, (100,)), Tensor(C, (100,))),  # misaligned
        (Tensor(A, (10, 10)), Tensor(B, (100,)), Tensor(C, (100,))),  # a rank
        (Tensor(A, (100,)), Tensor(B, (100,)), Tensor(A + 256, (100,))),  # C overlaps A
        (Tensor(A, (100,)), Tensor(B, (100,))),  # too few
        (Tensor(A, (100,)), Tensor(B, (100,)), object()),  # not a tensor
        (Tensor(A, (100,)), Tensor(B, (100,)), Tensor(C, (100,), grad=True)),  # autograd's
    ],
    ids=[
        *("size", "dtype", "device", "strided", "misaligned", "rank", "overlap", "few", "kind"),
        "output requires grad",
    ],
)
def test_tensors_that_do_not_fit_are_declined(fake, arrays):
    _, call = _torch_call(fake)
    before = len(fake.calls)
    assert not call(arrays, None)
    assert len(fake.calls) == before


def test_an_input_that_requires_grad_is_read_in_place(fake):
    _, call = _torch_call(fake)
    assert call((Tensor(A, (100,), grad=True), Tensor(B, (100,)), Tensor(C, (100,))), None)


def test_an_empty_output_overlaps_nothing(fake):
    _, call = _torch_call(fake)
    assert call((Tensor(A, (0,)), Tensor(A, (0,)), Tensor(A, (0,))), None)


def test_the_source_is_written_out_per_parameter(fake):
    usual, _ = _torch_call(fake)
    text = usual_calls._source("torch", usual.spec)
    assert "for " not in text.split("with LOCK")[0]  # no loop before the launch
    assert "a2.data_ptr()" in text and "s1[0] == n0" in text
