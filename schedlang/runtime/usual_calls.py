"""A CUDA kernel's usual call with torch tensors, cupy arrays or ``sl`` device arrays: checked
from what was worked out at build, launched on the caller's stream.

The general path (`cuda.arguments.place_arguments`) accepts every kind of array, and a call
then waits for the device, so that a host output can be copied back and an error reported at
the call. torch users expect what torch does: the kernel queued on the current stream (so that
it orders with the torch work around it, and a CUDA graph can capture it), the call returning
at once, a fault reported at the next synchronisation. The usual call is exact
``torch.Tensor``s of the parameters' dtypes on the kernel's GPU, C-contiguous, starting at a
multiple of 16 bytes, every dimension the constant or size it must be (the same analysis as the
CPU's guard, `fast_path.guard_spec`), outputs apart from the other arguments, sizes within the
index type; cupy arrays and ``sl`` device arrays likewise. For it, a call reads a few
attributes of each array, fills the kernel's parameter block and launches. Anything else
(numpy arrays, sizes passed by name, a mismatch of any kind, another thread than the one that
set the context up) returns False and the call takes the general path, which says what is
wrong: no check is lost.

The copy engine's tensor maps (`tensor_maps`) describe the arrays of a call: they are encoded
at the first call on a set of addresses and sizes and kept (the last `_MAP_SETS` sets), so that
a loop over the same buffers encodes none, and copied into the parameter block by value.

A call costs what Python does per call, so the checks are Python source written for each
kernel and kind of array (`_source`), with the parameters unrolled and every constant in place:
a loop over parameters, dimensions and sizes costs several microseconds more per call than the
same checks written out. The launch goes through `codegen.cpu.launcher`, one ctypes call.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..codegen.nvptx.plan import DevicePlan
from ..errors import LaunchError
from .cuda import driver
from .cuda.arguments import ALIGN
from .cuda.launch import check_grid, grid_of, temp_count
from .device_array import DeviceArray
from .fast_path import GuardSpec
from .size_limits import SizeLimits
from .streams import torch_stream
from .tensor_maps import MapBytes, encode

_TORCH, _CUPY, _SL = "torch", "cupy", "sl"
_TEMP_SETS = 16
_MAP_SETS = 64  # sets of addresses and sizes whose tensor maps are kept


class UsualCall:
    """The usual call of one kernel (see the module); `make` gives None where a kernel's calls
    cannot take it (host loops set their variables per launch)."""

    def __init__(
        self,
        name: str,
        plan: DevicePlan,
        functions: list[Any],
        spec: GuardSpec,
        limits: SizeLimits,
        device: driver.Device,
    ) -> None:
        self.name = name
        self.plan = plan
        self.functions = functions
        self.spec = spec
        self.device = device
        self.limits = limits if limits.needed else None
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        count = len(spec.params) + len(plan.temps) + len(spec.size_limits)
        self.storage = (ctypes.c_uint64 * max(1, count))()  # the parameters' values
        start = ctypes.addressof(self.storage)
        words = [start + 8 * k for k in range(count)]
        maps = len(plan.tensor_maps)  # after the sizes, by value (`codegen.nvptx.module`)
        self.maps = (MapBytes * max(1, maps))()
        self.map_bytes = ctypes.sizeof(MapBytes) * maps
        first = ctypes.addressof(self.maps)
        words += [first + ctypes.sizeof(MapBytes) * k for k in range(maps)]
        self.addresses = (ctypes.c_void_p * max(1, len(words)))(*words)
        self.encoded: dict[tuple, Any] = {}
        self.block = ctypes.addressof(self.addresses)  # the kernel parameters (void**)
        self.steps: dict[tuple[int, ...], list[tuple]] = {}
        self.cuda = driver.driver()
        self.calls: dict[type, Callable[[tuple, int | None], bool]] = {}
        self.temps: dict[tuple, tuple[list[DeviceArray], tuple[int, ...]]] = {}

    @classmethod
    def make(cls, name, plan, functions, spec, limits, device) -> UsualCall | None:
        if spec is None or plan.loop_vars:  # host loops set their variables per launch
            return None
        return cls(name, plan, functions, spec, limits, device)

    def launch(self, arrays: tuple, stream: int | None = None) -> bool:
        """Queue the kernels for `arrays` on `stream` (None: the caller's, `streams`) and
        return True, or return False (the general path decides) where the call is not the
        usual one."""
        if not arrays or threading.get_ident() != self.thread:
            return False
        call = self.calls.get(type(arrays[0]))
        if call is None:
            call = self.calls[type(arrays[0])] = self._call_for(type(arrays[0]))
        return call(arrays, stream)

    def _call_for(self, kind: type) -> Callable[[tuple, int | None], bool]:
        """The usual call for arrays of type `kind`, or one that always declines."""
        torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
        if torch is not None and kind is torch.Tensor:
            dtypes = [getattr(torch, dtype.name, None) for dtype, _, _ in self.spec.params]
            if not all(isinstance(d, torch.dtype) for d in dtypes):
                return _decline
            return self._compile(_TORCH, kind, dtypes, torch_stream(torch))
        if kind is DeviceArray:
            return self._compile(_SL, kind, [d for d, _, _ in self.spec.params], None)
        if cupy is not None and kind is cupy.ndarray:
            current = lambda ordinal: cupy.cuda.get_current_stream().ptr  # noqa: E731
            return self._compile(_CUPY, kind, [d for d, _, _ in self.spec.params], current)
        return _decline

    def _compile(self, library: str, kind: type, dtypes: list, current) -> Callable:
        names = {
            "T": kind,
            "ORD": self.device.ordinal,
            "LIMITS": self.limits,
            "STEPS": self.steps,
            "MAKE_STEPS": self._steps,
            "CURRENT": current,
            "LOCK": self.lock,
            "STORAGE": self.storage,
            "RUN": self._runner(),
            "SYNC": self._synchronize,
            "TEMPS": self.temps,
            "MAKE_TEMPS": self._temps,
            "MAPS": self._maps,
            "PLACE": functools.partial(ctypes.memmove, ctypes.addressof(self.maps)),
            "MAP_BYTES": self.map_bytes,
        }
        names.update((f"D{k}", d) for k, d in enumerate(dtypes))
        maps = bool(self.plan.tensor_maps)
        source = _source(library, self.spec, len(self.plan.temps), maps)
        code = compile(source, f"<usual call of {self.name}>", "exec")
        exec(code, names)
        return names["call"]

    def _runner(self) -> Callable[[list, int], None]:
        launch = _launch_address(self.cuda)
        if launch is None:  # no entry point to call: cuda-python's launch
            cuda, success = self.cuda, self.cuda.CUresult.CUDA_SUCCESS

            def run(steps: list, stream: int) -> None:
                for function, grid, block, shared, what in steps:
                    result = cuda.cuLaunchKernel(
                        function, *grid, *block, shared, stream, self.block, 0
                    )
                    if result[0] != success:
                        driver.check(result, what)

            return run
        from ..codegen.cpu.launcher import STREAM, launcher

        _, go = launcher()  # cached: its machine code stays loaded

        def run(steps: list, stream: int) -> None:
            for table, what in steps:
                table[STREAM] = stream
                code = go(ctypes.addressof(table))
                if code:
                    driver.check((self.cuda.CUresult(code),), what)

        return run

    def _synchronize(self) -> None:
        synced = self.cuda.cuStreamSynchronize(0)
        driver.check(synced, f"kernel '{self.name}' failed while running")

    def _temps(self, values: tuple[int, ...], stream: int) -> tuple[int, ...] | None:
        """The addresses of the temporaries for calls of sizes `values` on `stream`, allocated
        at the first such call; None once `_TEMP_SETS` sets are held."""
        if len(self.temps) >= _TEMP_SETS:
            return None
        arrays = [
            DeviceArray((temp_count(b, self.plan, values),), b.dtype) for b in self.plan.temps
        ]
        self.temps[values, stream] = (arrays, tuple(a.ptr for a in arrays))
        return self.temps[values, stream][1]

    def _maps(self, pointers: tuple[int, ...], sizes: tuple[int, ...]) -> int | None:
        """The address of the tensor maps for a call on `pointers` (the parameters' then the
        temporaries') and `sizes`, encoded at the first such call; None where the driver
        refuses one (the general path then says why)."""
        key = (pointers, sizes)
        made = self.encoded.get(key)
        if made is None:
            try:
                made = (MapBytes * len(self.plan.tensor_maps))(
                    *encode(self.plan, pointers, sizes)
                )
            except LaunchError:
                return None
            if len(self.encoded) >= _MAP_SETS:
                del self.encoded[next(iter(self.encoded))]  # the oldest
            self.encoded[key] = made
        return ctypes.addressof(made)

    def _steps(self, values: list[int]) -> list[tuple]:
        from ..codegen.cpu.launcher import table

        launch = _launch_address(self.cuda)
        steps = []
        for kernel, function in zip(self.plan.kernels, self.functions):
            grid = grid_of(kernel, self.plan, values)
            check_grid(f"{self.name}/{kernel.name}", grid, self.device)
            if min(grid) <= 0:
                continue
            what = (
                f"launching kernel '{self.name}/{kernel.name}' (grid {grid}, block {kernel.block})"
            )
            shared = kernel.dynamic_shared_bytes
            if launch is None:
                steps.append((function, grid, kernel.block, shared, what))
            else:
                words = table(launch, int(function), grid, kernel.block, shared, self.block)
                steps.append((words, what))
        if len(self.steps) < 64:  # a few shapes, not every shape a loop ever passes
            self.steps[tuple(values)] = steps
        return steps


def _decline(arrays: tuple, stream: int | None) -> bool:
    return False


@functools.cache
def _launch_address(cuda: Any) -> int | None:
    """The address of ``cuLaunchKernel`` as the driver hands it to cuda-python (the version of
    the entry point this driver has), or None where the driver module has no such query."""
    query = getattr(cuda, "cuGetProcAddress", None)
    if query is None:
        return None
    flags = cuda.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT
    try:
        result = query(b"cuLaunchKernel", 12000, flags)
    except (TypeError, ValueError):  # another signature of the query
        return None
    if result[0] != cuda.CUresult.CUDA_SUCCESS or not int(result[1]):
        return None
    return int(result[1])


def _source(library: str, spec: GuardSpec, temps: int = 0, maps: bool = False) -> str:
    """Python source of ``call(arrays, stream)`` for `spec` and arrays of `library` (module),
    for a kernel with `temps` temporaries and, where `maps`, tensor maps."""
    count = len(spec.params)
    a = [f"a{k}" for k in range(count)]
    lines = [
        "def call(arrays, stream):",
        f"    if len(arrays) != {count}:",
        "        return False",
        f"    {', '.join(a)}{',' if count == 1 else ''} = arrays",
    ]

    def require(condition: str) -> None:
        lines.append(f"    if not ({condition}):")
        lines.append("        return False")

    for k, (_, written, dims) in enumerate(spec.params):
        x = a[k]
        if library == _TORCH:
            require(
                f"type({x}) is T and {x}.dtype is D{k} and {x}.get_device() == ORD "
                f"and {x}.is_contiguous()"
            )
            if written:  # autograd's outputs are the general path's to refuse or detach
                require(f"not {x}.requires_grad")
            lines.append(f"    p{k} = {x}.data_ptr()")
            lines.append(f"    s{k} = {x}.shape")
            require(f"len(s{k}) == {len(dims)}")
        elif library == _CUPY:
            require(
                f"type({x}) is T and {x}.dtype is D{k} and {x}.ndim == {len(dims)} "
                f"and {x}.device.id == ORD and {x}.flags.c_contiguous"
            )
            lines.append(f"    p{k} = {x}.data.ptr")
            lines.append(f"    s{k} = {x}.shape")
        else:
            require(f'type({x}) is T and {x}.device == "cuda" and {x}.dtype == D{k}')
            lines.append(f"    p{k} = {x}.ptr")
            lines.append(f"    s{k} = {x}.shape")
            require(f"len(s{k}) == {len(dims)} and p{k}")
    pointers = [f"p{k}" for k in range(count)]
    require(f"not ({' | '.join(pointers)}) % {ALIGN}")
    sources = spec.sources()
    sizes = [f"n{size}" for size in range(len(sources))]
    for size, (k, d) in enumerate(sources):
        lines.append(f"    n{size} = s{k}[{d}]")
    checks = []
    for k, (_, _, dims) in enumerate(spec.params):
        for d, (value, size) in enumerate(dims):
            if size < 0:
                checks.append(f"s{k}[{d}] == {value}")
            elif sources[size] != (k, d):
                checks.append(f"s{k}[{d}] == n{size}")
    if checks:
        require(" and ".join(checks))
    for k, (dtype, _, dims) in enumerate(spec.params):
        extent = " * ".join([f"s{k}[{d}]" for d in range(len(dims))] + [str(dtype.itemsize)])
        lines.append(f"    e{k} = p{k} + {extent}")
    for k, (_, written, _) in enumerate(spec.params):
        if written:  # an output that is not empty lies apart from every other argument
            for j in range(count):
                if j != k:
                    require(f"e{k} <= p{k} or p{k} >= e{j} or p{j} >= e{k}")
    values = f"({', '.join(sizes)}{',' if len(sizes) == 1 else ''})"
    lines += [
        "    if LIMITS is not None:",
        "        try:",
        f"            LIMITS.check({values}, arrays)",
        "        except ValueError:",
        "            return False",
        f"    steps = STEPS.get({values})",
        "    if steps is None:",
        f"        steps = MAKE_STEPS(list({values}))",
    ]
    wait = library == _SL
    if wait:
        lines += ["    wait = stream is None", "    if wait:", "        stream = 0"]
    else:
        lines += ["    if stream is None:", "        stream = CURRENT(ORD)"]
    held = [f"t[{k}]" for k in range(temps)]
    if temps:
        lines += [
            f"    t = TEMPS.get(({values}, stream))",
            "    if t is not None:",
            "        t = t[1]",
            "    else:",
            f"        t = MAKE_TEMPS({values}, stream)",
            "        if t is None:",
            "            return False",
        ]
    if maps:
        everything = ", ".join(pointers + held)
        lines.append(f"    m = MAPS(({everything},), {values})")
        require("m is not None")
    lines += [
        "    with LOCK:",
        f"        STORAGE[:] = ({', '.join(pointers + held + sizes)},)",
        *(["        PLACE(m, MAP_BYTES)"] if maps else []),
        "        RUN(steps, stream)",
    ]
    if wait:
        lines += ["    if wait:", "        SYNC()"]
    lines.append("    return True")
    return "\n".join(lines) + "\n"
