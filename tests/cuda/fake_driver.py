"""A stand-in for cuda-python's driver module that records every call, so that what the CUDA
runtime asks of the driver, and in which order, is tested on machines without a GPU."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from schedlang.runtime.cuda import driver
from schedlang.runtime.cuda.driver import Device

SUCCESS = "CUDA_SUCCESS"

H100 = Device(
    ordinal=0,
    handle=None,
    context=None,
    name="H100",
    arch="sm_90",
    max_threads=1024,
    max_block=(1024, 1024, 64),
    max_grid=(2**31 - 1, 65535, 65535),
    max_shared=49152,
    max_shared_optin=232448,
)


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple


class FakeDriver:
    """The driver calls the runtime makes. `elapsed_ms` are the times the events report, in
    turn (then 1 ms); each launch records its first `parameters` kernel parameters (8 bytes
    each)."""

    CUresult = SimpleNamespace(CUDA_SUCCESS=SUCCESS)
    CUfunction_attribute = SimpleNamespace(
        CU_FUNC_ATTRIBUTE_NUM_REGS="NUM_REGS",
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES",
    )
    CUpointer_attribute = SimpleNamespace(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL="DEVICE_ORDINAL")

    def __init__(self, parameters: int = 0, elapsed_ms: tuple[float, ...] = (1.0,)) -> None:
        self.calls: list[Call] = []
        self.parameters = parameters
        self.elapsed_ms = list(elapsed_ms)
        self.launched: list[tuple[int, ...]] = []
        self._next = 1 << 20

    def names(self) -> list[str]:
        return [c.name for c in self.calls]

    def _record(self, name: str, *args: object) -> None:
        self.calls.append(Call(name, args))

    def cuGetErrorString(self, error: object) -> tuple:
        return (SUCCESS, b"a fake error")

    def cuMemAlloc(self, nbytes: int) -> tuple:
        self._record("cuMemAlloc", nbytes)
        ptr = self._next
        self._next += -(-nbytes // 256) * 256 + 256
        return (SUCCESS, ptr)

    def cuMemFree(self, ptr: int) -> tuple:
        self._record("cuMemFree", ptr)
        return (SUCCESS,)

    def cuMemcpyHtoD(self, dst: int, src: int, nbytes: int) -> tuple:
        self._record("cuMemcpyHtoD", dst, nbytes)
        return (SUCCESS,)

    def cuMemcpyDtoH(self, dst: int, src: int, nbytes: int) -> tuple:
        self._record("cuMemcpyDtoH", src, nbytes)
        return (SUCCESS,)

    def cuPointerGetAttribute(self, attribute: object, ptr: int) -> tuple:
        self._record("cuPointerGetAttribute", attribute, ptr)
        return (SUCCESS, 0)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) -> tuple:
        self._record("cuLaunchKernel", f, (gx, gy, gz), (bx, by, bz), shared, stream, params)
        pointers = (ctypes.c_void_p * self.parameters).from_address(params)
        values = [ctypes.c_int64.from_address(p).value for p in pointers]
        self.launched.append(tuple(values))
        return (SUCCESS,)

    def cuFuncSetAttribute(self, function: object, attribute: object, value: int) -> tuple:
        self._record("cuFuncSetAttribute", function, attribute, value)
        return (SUCCESS,)

    def cuFuncGetAttribute(self, attribute: object, function: object) -> tuple:
        self._record("cuFuncGetAttribute", attribute, function)
        return (SUCCESS, 32)

    def cuEventCreate(self, flags: int) -> tuple:
        self._record("cuEventCreate", flags)
        return (SUCCESS, f"event{len(self.calls)}")

    def cuEventRecord(self, event: object, stream: int) -> tuple:
        self._record("cuEventRecord", event, stream)
        return (SUCCESS,)

    def cuEventSynchronize(self, event: object) -> tuple:
        self._record("cuEventSynchronize", event)
        return (SUCCESS,)

    def cuEventElapsedTime(self, start: object, end: object) -> tuple:
        self._record("cuEventElapsedTime", start, end)
        return (SUCCESS, self.elapsed_ms.pop(0) if self.elapsed_ms else 1.0)

    def cuEventDestroy(self, event: object) -> tuple:
        self._record("cuEventDestroy", event)
        return (SUCCESS,)

    def cuStreamSynchronize(self, stream: int) -> tuple:
        self._record("cuStreamSynchronize", stream)
        return (SUCCESS,)


def install(monkeypatch: pytest.MonkeyPatch, fake: FakeDriver, device: Device = H100) -> None:
    """Route the runtime's driver calls to `fake`, on `device`; modules load as stand-ins."""
    monkeypatch.setattr(driver, "driver", lambda: fake)
    monkeypatch.setattr(driver, "device", lambda: device)
    monkeypatch.setattr(driver, "load_module", lambda ptx, what: "module")
    monkeypatch.setattr(driver, "function", lambda module, name: f"function {name}")
