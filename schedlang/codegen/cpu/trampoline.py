"""A CPU kernel's usual call checked and started in machine code: numpy arrays in, the kernel run,
in about a microsecond.

From Python, everything a call must check of an array costs a few hundred nanoseconds an
attribute (``array.ctypes.data`` alone 1.5 us), more than a small kernel runs. The *guard* of a
kernel is a function generated for it that takes the call's tuple of arguments as a Python
object (``id(arrays)``: an integer, cheap for ctypes to convert) and a table of the addresses
it compares with (the kernel's entry, numpy's array type, the parameters' dtypes: none is in
the code, which a disk cache may then keep for the next process), reads the arrays
from it where CPython keeps a tuple's items, and reads what it checks from the fields numpy's C API
reads (``PyArray_DATA``, ``PyArray_NDIM``, ``PyArray_DIMS``, ``PyArray_DESCR``,
``PyArray_FLAGS``): that each object is exactly a numpy array, of the parameter's dtype and
rank, C-contiguous (outputs writable), that each dimension is the constant or the size it must
be (the first dimension that shows a size gives it), that the sizes and element counts fit the
kernel's index type (`runtime.size_limits`), and that no output overlaps another argument (the
byte ranges of contiguous arrays). Then it calls the kernel's entry with the data pointers and
sizes and returns its status; where any check fails it returns `UNUSUAL` and touches nothing,
and the call takes the general path, which says what is wrong (`runtime.arguments`).

`array_layout` checks that numpy keeps those fields where the C API says, and CPython a tuple's
length and items where its C API says, on probe objects, on first use; where they do not, no
guard is made and every call takes the general path.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from llvmlite import __version__ as llvmlite_version

from .. import disk_cache
from . import linker
from .guard_spec import GuardSpec
from .host_key import host_key

UNUSUAL = -1  # the guard's answer when the call is not the usual case

C_CONTIGUOUS = 0x1  # NPY_ARRAY_C_CONTIGUOUS
WRITEABLE = 0x400  # NPY_ARRAY_WRITEABLE


@dataclass(frozen=True)
class ArrayLayout:
    """Byte offsets of the fields of a numpy array object (``PyArrayObject_fields``)."""

    type: int
    data: int
    ndim: int
    dims: int
    descr: int
    flags: int
    tuple_size: int  # a tuple's length (``Py_SIZE``) and first item (``PyTuple_GET_ITEM``)
    tuple_items: int


@functools.cache
def array_layout() -> ArrayLayout | None:
    """Where numpy keeps the fields a guard reads, if it keeps them where its C API says."""
    word = ctypes.sizeof(ctypes.c_void_p)
    layout = ArrayLayout(word, 2 * word, 3 * word, 4 * word, 7 * word, 8 * word, 2 * word, 3 * word)
    probes = [
        np.arange(3.0),
        np.zeros((2, 5), np.float32)[1:],
        np.zeros((4, 6), np.int16)[:, ::2],
        np.empty(0, np.int8),
        np.ones((3, 1, 2), np.float16),
    ]
    probes[-1].setflags(write=False)

    def read(obj: object, offset: int, kind=ctypes.c_int64) -> int:
        return kind.from_address(id(obj) + offset).value or 0

    for a in probes:
        dims = ctypes.cast(read(a, layout.dims), ctypes.POINTER(ctypes.c_int64))
        flags = read(a, layout.flags, ctypes.c_int32)
        found = (
            read(a, layout.type) == id(np.ndarray)
            and read(a, layout.data) == a.ctypes.data
            and read(a, layout.ndim, ctypes.c_int32) == a.ndim
            and tuple(dims[d] for d in range(a.ndim)) == a.shape
            and read(a, layout.descr) == id(a.dtype)
            and bool(flags & C_CONTIGUOUS) == a.flags.c_contiguous
            and bool(flags & WRITEABLE) == a.flags.writeable
        )
        if not found:
            return None
    for t in ((), tuple(probes), (probes[0],)):
        items = [read(t, layout.tuple_items + word * k) for k in range(len(t))]
        if read(t, layout.type) != id(tuple) or read(t, layout.tuple_size) != len(t):
            return None
        if items != [id(x) for x in t]:
            return None
    return layout


@dataclass(frozen=True)
class Guard:
    """A kernel's guard: ``function(id(arrays), table)`` returns the entry's status or
    `UNUSUAL` (`arrays` a tuple)."""

    code: object  # keeps the machine code loaded
    function: ctypes._CFuncPtr
    table: int  # the address of `values`
    values: ctypes.Array  # entry, numpy's array type, each parameter's dtype (addresses)
    keep: tuple  # the objects whose addresses the table holds


def guard(spec: GuardSpec, entry: int) -> Guard | None:
    """The guard of the kernel whose entry is at address `entry`; None where numpy's or
    CPython's layout is not their C API's (`array_layout`)."""
    layout = array_layout()
    if layout is None:
        return None
    code, function = _compiled(spec, layout)
    dtypes = tuple(dtype for dtype, _, _ in spec.params)
    values = [entry, id(np.ndarray), *(id(d) for d in dtypes)]
    table = (ctypes.c_int64 * len(values))(*values)
    return Guard(code, function, ctypes.addressof(table), table, dtypes)


@functools.lru_cache(maxsize=256)
def _compiled(spec: GuardSpec, layout: ArrayLayout) -> tuple[object, ctypes._CFuncPtr]:
    """The guard's machine code for `spec`, shared by kernels of one spec, from the disk
    cache where it is there (found by `spec` itself: no IR is made for a guard on disk)."""
    made = []

    def compile_guard() -> bytes:
        from . import jit as cpu_jit
        from .guard_ir import guard_text

        made.append(guard_text(spec, layout))
        return cpu_jit.object_code(made[0])

    obj = disk_cache.load_or_make(_disk_path(spec, layout), compile_guard)
    shown = made[0] if made else f"(the guard of {spec}, read from the disk cache)"
    linked, address = linker.link(obj, NAME, {}, shown)
    call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)(address)
    return linked, call


def _disk_path(spec: GuardSpec, layout: ArrayLayout) -> Path | None:
    """Where the guard of `spec` is kept: keyed by what its code is made from (`spec`, the
    layout, this file's source, LLVM's version and the host), not by its IR, so that finding
    it costs no IR."""
    folder = disk_cache.directory()
    if folder is None:
        return None
    made_from = f"{_SOURCE} {llvmlite_version} {host_key()} {layout} {spec}"
    return folder / f"guard-{hashlib.sha256(made_from.encode()).hexdigest()}.o"


NAME = "schedlang_guard"
# the generator's version: its source and this file's
_SOURCE = hashlib.sha256(
    (Path(__file__).parent / "guard_ir.py").read_bytes() + Path(__file__).read_bytes()
).hexdigest()
