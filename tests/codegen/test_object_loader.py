"""The object loader (`codegen.cpu.object_loader`): the CPU's object files mapped without LLVM,
as a kernel revived from disk needs; what it does not know is `Unloadable`, for LLVM's linker."""

from __future__ import annotations

import ctypes
import platform
import struct
from pathlib import Path

import numpy as np
import pytest

from schedlang.codegen.cpu import jit as cpu_jit
from schedlang.codegen.cpu import linker, object_loader
from schedlang.codegen.cpu.host_key import host_key

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64" or not Path("/proc/self/maps").exists(),
    reason="the object loader maps x86-64 ELF files (elsewhere LLVM links them)",
)

CALLS = """
declare float @expf(float)
@table = internal constant [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0]
@count = internal global i32 0

define float @f(float %x, i32 %i) {
  %p = getelementptr [4 x float], ptr @table, i32 0, i32 %i
  %t = load float, ptr %p
  %e = call float @expf(float %x)
  %c = load i32, ptr @count
  %c1 = add i32 %c, 1
  store i32 %c1, ptr @count
  %r = fmul float %e, %t
  ret float %r
}

define i32 @calls() {
  %c = load i32, ptr @count
  ret i32 %c
}

declare i32 @imported(i32)
define i32 @g(i32 %x) {
  %r = call i32 @imported(i32 %x)
  ret i32 %r
}
"""


def _object() -> bytes:
    return cpu_jit.object_code(CALLS)


def _permissions(address: int) -> str:
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in span.split("-"))
        if lo <= address < hi:
            return perms
    raise AssertionError(f"{address:#x} is not mapped")


@ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)
def _triple(x):
    return 3 * x


def test_code_constants_variables_and_the_c_library_are_linked():
    imported = ctypes.cast(_triple, ctypes.c_void_p).value
    loaded, at = object_loader.load(_object(), ("f", "calls", "g"), {"imported": imported})
    f = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int32)(at["f"])
    calls = ctypes.CFUNCTYPE(ctypes.c_int32)(at["calls"])
    g = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(at["g"])
    for i in range(4):
        expected = np.float32(np.exp(np.float32(0.5))) * np.float32(i + 1)
        assert f(0.5, i) == pytest.approx(float(expected), rel=1e-6)
    assert calls() == 4  # its variable is written and read back
    assert g(14) == 42  # an address given by the caller
    code, variables = (ctypes.addressof(ctypes.c_char.from_buffer(r)) for r in loaded.regions)
    assert _permissions(at["f"]).startswith("r-x")  # never writable and executable at once
    assert _permissions(variables).startswith("rw-")
    assert _permissions(code) == _permissions(at["f"])


def test_code_is_unmapped_when_its_handle_goes():
    loaded, _ = object_loader.load(_object(), ("f",), {"imported": 1})
    regions = loaded.regions
    del loaded
    assert all(region.closed for region in regions)


def _patched(obj: bytes, offset: int, data: bytes) -> bytes:
    return obj[:offset] + data + obj[offset + len(data) :]


def _first_relocation(obj: bytes) -> int:
    """The file offset of the first entry of the first relocation section."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)  # ELF64's section header table
    (shnum,) = struct.unpack_from("<H", obj, 0x3C)
    for header in range(shoff, shoff + 64 * shnum, 64):
        if struct.unpack_from("<I", obj, header + 4)[0] == 4:  # SHT_RELA
            return struct.unpack_from("<Q", obj, header + 24)[0]
    raise AssertionError("no relocations")


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda obj: b"not an object file", "not an ELF file"),
        (lambda obj: _patched(obj, 18, struct.pack("<H", 183)), "not x86-64"),  # aarch64
        (
            lambda obj: _patched(obj, _first_relocation(obj) + 8, struct.pack("<I", 9)),
            "relocation kind 9",  # R_X86_64_GOTPCREL: not what the large code model makes
        ),
    ],
)
def test_what_it_does_not_know_is_unloadable(damage, said):
    with pytest.raises(object_loader.Unloadable, match=said):
        object_loader.load(damage(_object()), ("f",), {"imported": 1})


def test_an_undefined_symbol_is_unloadable_by_name():
    with pytest.raises(object_loader.Unloadable, match="'imported' is defined nowhere"):
        object_loader.load(_object(), ("f",), {})


def test_the_linker_falls_back_to_llvm_for_what_the_loader_refuses(monkeypatch):
    def unloadable(*args):
        raise object_loader.Unloadable("as on another machine")

    monkeypatch.setattr(object_loader, "load", unloadable)
    linked, address = linker.link(_object(), "calls", {"imported": 1}, CALLS)
    assert isinstance(linked, cpu_jit.Linked)
    assert ctypes.CFUNCTYPE(ctypes.c_int32)(address)() == 0


def test_the_host_key_on_disk_is_llvms():
    assert host_key() == cpu_jit.host().key
