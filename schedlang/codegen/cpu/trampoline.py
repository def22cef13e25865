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
from llvmlite import ir

from .. import disk_cache
from ..llvm.control import for_range
from . import jit as cpu_jit
from .guard_spec import GuardSpec
from .jit import Linked

UNUSUAL = -1  # the guard's answer when the call is not the usual case

_I8P = ir.PointerType(ir.IntType(8))
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_C_CONTIGUOUS = 0x1  # NPY_ARRAY_C_CONTIGUOUS
_WRITEABLE = 0x400  # NPY_ARRAY_WRITEABLE


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
            and bool(flags & _C_CONTIGUOUS) == a.flags.c_contiguous
            and bool(flags & _WRITEABLE) == a.flags.writeable
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
def _compiled(spec: GuardSpec, layout: ArrayLayout) -> tuple[Linked, ctypes._CFuncPtr]:
    """The guard's machine code for `spec`, shared by kernels of one spec, from the disk
    cache where it is there (found by `spec` itself: no IR is made for a guard on disk)."""
    made = []

    def compile_guard() -> bytes:
        made.append(_text(spec, layout))
        return cpu_jit.object_code(made[0])

    obj = disk_cache.load_or_make(_disk_path(spec, layout), compile_guard)
    shown = made[0] if made else f"(the guard of {spec}, read from the disk cache)"
    linked, address = cpu_jit.link(obj, _NAME, {}, shown)
    call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)(address)
    return linked, call


def _text(spec: GuardSpec, layout: ArrayLayout) -> str:
    """The guard's LLVM IR."""
    count, sizes = len(spec.params), len(spec.size_limits)
    module = ir.Module(name="guard")
    module.triple = cpu_jit.host().target.triple
    module.data_layout = str(cpu_jit.host().machine.target_data)
    fn = ir.Function(module, ir.FunctionType(_I32, [_I64, _I64]), _NAME)
    start = fn.append_basic_block("entry")
    unusual = fn.append_basic_block("unusual")
    ir.IRBuilder(unusual).ret(ir.Constant(_I32, UNUSUAL))
    b = ir.IRBuilder(start)
    pointers = b.alloca(_I8P, ir.Constant(_I32, max(1, count)))
    values = b.alloca(_I64, ir.Constant(_I32, max(1, sizes)))
    starts = b.alloca(_I64, ir.Constant(_I32, max(1, count)))  # each array's bytes
    ends = b.alloca(_I64, ir.Constant(_I32, max(1, count)))
    steps = iter(range(1 << 30))

    def require(cond: ir.Value) -> None:
        go = fn.append_basic_block(f"ok{next(steps)}")
        b.cbranch(cond, go, unusual)
        b.position_at_end(go)

    def field(obj: ir.Value, offset: int, typ: ir.Type) -> ir.Value:
        address = b.add(obj, ir.Constant(_I64, offset))
        return b.load(b.inttoptr(address, typ.as_pointer()))

    args, table = fn.args
    constants = b.inttoptr(table, _I64.as_pointer())

    def constant(k: int) -> ir.Value:  # entry 0, array type 1, dtype of parameter k - 2
        return b.load(b.gep(constants, [ir.Constant(_I32, k)]))

    require(b.icmp_signed("==", field(args, layout.tuple_size, _I64), _const(count)))
    found: dict[int, ir.Value] = {}
    for k, (dtype, written, dims) in enumerate(spec.params):
        obj = field(args, layout.tuple_items + 8 * k, _I64)
        require(b.icmp_unsigned("==", field(obj, layout.type, _I64), constant(1)))
        require(b.icmp_unsigned("==", field(obj, layout.descr, _I64), constant(2 + k)))
        require(b.icmp_signed("==", field(obj, layout.ndim, _I32), ir.Constant(_I32, len(dims))))
        need = _C_CONTIGUOUS | (_WRITEABLE if written else 0)
        flags = b.and_(field(obj, layout.flags, _I32), ir.Constant(_I32, need))
        require(b.icmp_unsigned("==", flags, ir.Constant(_I32, need)))
        shape = b.inttoptr(field(obj, layout.dims, _I64), _I64.as_pointer())
        elements = _const(1)
        for d, (value, size) in enumerate(dims):
            extent = b.load(b.gep(shape, [ir.Constant(_I32, d)]))
            if size < 0:
                require(b.icmp_signed("==", extent, _const(value)))
            elif size in found:
                require(b.icmp_signed("==", extent, found[size]))
            else:
                require(b.icmp_signed("<=", extent, _const(spec.size_limits[size])))
                found[size] = extent
                b.store(extent, b.gep(values, [ir.Constant(_I32, size)]))
            elements = b.mul(elements, extent)  # an array's own: numpy keeps its bytes < 2**63
        if spec.count_limit is not None:
            require(b.icmp_signed("<=", elements, _const(spec.count_limit)))
        data = field(obj, layout.data, _I64)
        b.store(b.inttoptr(data, _I8P), b.gep(pointers, [ir.Constant(_I32, k)]))
        end = b.add(data, b.mul(elements, _const(dtype.itemsize)))
        b.store(data, b.gep(starts, [ir.Constant(_I32, k)]))
        b.store(end, b.gep(ends, [ir.Constant(_I32, k)]))
    _require_apart(b, module, spec, starts, ends, require)
    entry_t = ir.FunctionType(_I32, [_I8P, _I8P])
    target = b.inttoptr(constant(0), entry_t.as_pointer())
    b.ret(b.call(target, [b.bitcast(pointers, _I8P), b.bitcast(values, _I8P)]))
    return str(module)


def _require_apart(b: ir.IRBuilder, module: ir.Module, spec: GuardSpec, starts, ends, require):
    """No output's bytes overlap another argument's (empty ranges overlap nothing). A loop
    over the outputs and the arguments rather than a check per pair: a kernel of a hundred
    outputs would otherwise give LLVM ten thousand branches to optimise (a minute)."""
    outputs = [k for k, (_, written, _) in enumerate(spec.params) if written]
    if not outputs:
        return
    table_t = ir.ArrayType(_I32, len(outputs))
    table = ir.GlobalVariable(module, table_t, "outputs")
    table.global_constant, table.linkage = True, "internal"
    table.initializer = ir.Constant(table_t, outputs)
    zero = ir.Constant(_I32, 0)
    with for_range(b, zero, ir.Constant(_I32, len(outputs)), "output") as o:
        k = b.load(b.gep(table, [zero, o]))
        lo, hi = (b.load(b.gep(bound, [k])) for bound in (starts, ends))
        with for_range(b, zero, ir.Constant(_I32, len(spec.params)), "other") as j:
            other_lo, other_hi = (b.load(b.gep(bound, [j])) for bound in (starts, ends))
            apart = b.or_(b.icmp_unsigned("<=", hi, other_lo), b.icmp_unsigned("<=", other_hi, lo))
            empty = b.or_(b.icmp_unsigned("==", lo, hi), b.icmp_unsigned("==", other_lo, other_hi))
            require(b.or_(b.or_(apart, empty), b.icmp_signed("==", j, k)))


def _disk_path(spec: GuardSpec, layout: ArrayLayout) -> Path | None:
    """Where the guard of `spec` is kept: keyed by what its code is made from (`spec`, the
    layout, this file's source, LLVM's version and the host), not by its IR, so that finding
    it costs no IR."""
    folder = disk_cache.directory()
    if folder is None:
        return None
    made_from = f"{_SOURCE} {llvmlite_version} {cpu_jit.host().key} {layout} {spec}"
    return folder / f"guard-{hashlib.sha256(made_from.encode()).hexdigest()}.o"


_NAME = "schedlang_guard"
_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()  # this generator's version


def _const(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)
