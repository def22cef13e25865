"""The C functions through which a CPU kernel calls Python functions registered with
`sl.register_func`: the calls of a declared tensor intrinsic whose body is ``call_packed``
(TE's ``tvm.tir.call_packed`` given an intrinsic's buffers), once per tile.

Each call site (`PackedSite`) gets a ctypes callback of its exact signature, linked into the
kernel under the site's symbol. The callback makes each tile a numpy view of the tensor (the
buffer's shape, the tensor's strides), looks the function up by name (as TE does, at the
call), and calls it. A function that raises cannot unwind through the kernel's frames: the
callback keeps the exception, and the kernel raises it when the call returns.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..ir.packed import get_global_func
from ..loopir.core.nodes import CallExtern, LoweredFunc, PackedSite
from ..loopir.core.visit import walk_stmt


class Trampoline:
    """The callback of one call site, alive as long as the process (kernels link to it)."""

    def __init__(self, site: PackedSite) -> None:
        self.site = site
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        kinds: list = []
        for spec in site.arrays:
            kinds += [ctypes.c_int64] if spec is None else [ctypes.c_void_p]
            kinds += [] if spec is None else [ctypes.c_int64] * len(spec[0])
        self.callback = ctypes.CFUNCTYPE(ctypes.c_int32, *kinds)(self._call)
        self.address = ctypes.cast(self.callback, ctypes.c_void_p).value

    def _call(self, *raw: int) -> int:
        try:
            get_global_func(self.site.func)(*self._arguments(raw))
        except BaseException as error:  # noqa: BLE001 - kept, raised when the kernel returns
            with self._lock:
                self.errors.append(error)
            return -1
        return 0

    def _arguments(self, raw: tuple[int, ...]) -> list[object]:
        args: list[object] = []
        at = 0
        for spec in self.site.arrays:
            if spec is None:
                args.append(int(raw[at]))
                at += 1
                continue
            shape, dtype = spec
            strides = raw[at + 1 : at + 1 + len(shape)]
            args.append(_view(raw[at], shape, np.dtype(dtype), strides))
            at += 1 + len(shape)
        return args

    def take_error(self) -> BaseException | None:
        with self._lock:
            errors, self.errors = self.errors, []
        return errors[0] if errors else None


def _view(address: int, shape: tuple[int, ...], dtype: np.dtype, strides) -> np.ndarray:
    """The tile at `address` as a writable numpy array over the tensor's memory."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    memory = (ctypes.c_char * (span * dtype.itemsize)).from_address(address)
    flat = np.frombuffer(memory, dtype, count=span)
    step = [s * dtype.itemsize for s in strides]
    return np.lib.stride_tricks.as_strided(flat, shape, step)


_TRAMPOLINES: dict[str, Trampoline] = {}
_LOCK = threading.Lock()


def trampolines(func: LoweredFunc) -> list[Trampoline]:
    """The callbacks the packed calls of `func` call (made once per call site)."""
    found = []
    with _LOCK:
        for s in walk_stmt(func.body):
            if isinstance(s, CallExtern) and s.packed is not None:
                if s.name not in _TRAMPOLINES:
                    _TRAMPOLINES[s.name] = Trampoline(s.packed)
                if _TRAMPOLINES[s.name] not in found:
                    found.append(_TRAMPOLINES[s.name])
    return found


def raise_errors(called: list[Trampoline]) -> None:
    """Raise the first exception a registered function raised during the kernel's call."""
    for t in called:
        error = t.take_error()
        if error is not None:
            raise error
