"""Object files loaded into the process without LLVM: the x86-64 ELF files schedlang compiles.

A kernel revived from the disk cache or a saved file only needs its machine code mapped and its
few references filled in; LLVM's JIT linker does that too, but importing ``llvmlite.binding``
for it costs a second process more than the rest of the revival together. The object files
LLVM makes for JIT use on x86-64 are simple: the large code model reaches every symbol through
a 64-bit absolute address (``R_X86_64_64``), and unwind tables are only relative to code
(``R_X86_64_PC64``). So the loader maps the file's sections (code and constants read-only and
executable, variables writable; never both), resolves each symbol (the object's own sections,
the addresses given, then the process, where Python, libc and libm are), and writes the
addresses in. Unwind tables are not loaded: no exception or debugger walks generated code.

Anything else (another machine, a relocation kind this does not know, thread-local storage)
is `Unloadable`, and the caller links the file with LLVM instead (`linker`).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import struct
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

ELF_MAGIC = b"\x7fELF"
ELFCLASS64, ELFDATA2LSB, ET_REL, EM_X86_64 = 2, 1, 1, 62
SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 2, 4, 8
SHT_X86_64_UNWIND = 0x70000001
SHF_WRITE, SHF_ALLOC, SHF_TLS = 0x1, 0x2, 0x400
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
STB_LOCAL = 0
R_X86_64_NONE, R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_PC64 = 0, 1, 2, 4, 24

_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_PAGE = mmap.PAGESIZE


class Unloadable(Exception):
    """An object file this loader does not handle; LLVM's linker can."""


@dataclass(frozen=True)
class _Section:
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int


class LoadedObject:
    """An object file's code and data mapped into the process, unmapped when this goes (its
    addresses must not be called after that)."""

    def __init__(self, regions: list[mmap.mmap]) -> None:
        self.regions = regions  # the code and constants, then the variables
        weakref.finalize(self, _unmap, regions).atexit = False  # the process unmaps at exit


def load(
    obj: bytes, symbols: tuple[str, ...], imports: Mapping[str, int]
) -> tuple[LoadedObject, dict[str, int]]:
    """Map `obj` and return it with the addresses of its exported `symbols`; `imports` gives
    addresses for symbols it uses (before the process's own)."""
    sections = _sections(obj)
    loaded = [i for i, s in enumerate(sections) if _loaded(s)]
    places: dict[int, tuple[int, int]] = {}  # section -> (region, offset in it)
    sizes = [0, 0]  # read-only and executable; writable
    for i in loaded:
        region = 1 if sections[i].flags & SHF_WRITE else 0
        start = _round_up(sizes[region], max(sections[i].align, 1))
        places[i] = (region, start)
        sizes[region] = start + sections[i].size
    maps = [_anonymous(size) for size in sizes]
    bases = [_address(m) for m in maps]
    for i in loaded:
        section = sections[i]
        region, start = places[i]
        if section.kind != SHT_NOBITS:
            maps[region][start : start + section.size] = obj[
                section.offset : section.offset + section.size
            ]

    def section_address(index: int) -> int:
        region, start = places[index]
        return bases[region] + start

    table = _symbol_table(obj, sections)
    resolved = [_resolve(symbol, section_address, places, imports) for symbol in table]
    for section in sections:
        if section.kind == SHT_RELA and section.info in places:
            region, start = places[section.info]
            _relocate(obj, section, maps[region], start, bases[region] + start, resolved)
    if sizes[0]:
        _protect(bases[0], len(maps[0]), mmap.PROT_READ | mmap.PROT_EXEC)
    addresses = {}
    for name in symbols:
        found = [r for symbol, r in zip(table, resolved) if symbol.name == name and symbol.own]
        if not found:
            _unmap(maps)
            raise Unloadable(f"the object file defines no '{name}'")
        addresses[name] = found[0]
    return LoadedObject(maps), addresses


def _sections(obj: bytes) -> list[_Section]:
    if len(obj) < _HEADER.size or obj[:4] != ELF_MAGIC:
        raise Unloadable("not an ELF file")
    ident, kind, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx = (
        _HEADER.unpack_from(obj)
    )
    if ident[4] != ELFCLASS64 or ident[5] != ELFDATA2LSB or kind != ET_REL:
        raise Unloadable("not a 64-bit little-endian relocatable file")
    if machine != EM_X86_64:
        raise Unloadable(f"machine {machine} is not x86-64")
    raw = [_SECTION.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]
    names = raw[shstrndx]
    out = []
    for name, kind, flags, _, offset, size, link, info, align, _ in raw:
        out.append(
            _Section(_string(obj, names[4] + name), kind, flags, offset, size, link, info, align)
        )
    return out


def _loaded(section: _Section) -> bool:
    if not section.flags & SHF_ALLOC or section.kind == SHT_X86_64_UNWIND:
        return False
    if section.name == ".eh_frame":
        return False
    if section.flags & SHF_TLS:
        raise Unloadable(f"thread-local section {section.name}")
    return section.size > 0


@dataclass(frozen=True)
class _Symbol:
    name: str
    bind: int
    section: int
    value: int

    @property
    def own(self) -> bool:
        return self.bind != STB_LOCAL and self.section not in (SHN_UNDEF, SHN_COMMON)


def _symbol_table(obj: bytes, sections: list[_Section]) -> list[_Symbol]:
    tables = [s for s in sections if s.kind == SHT_SYMTAB]
    if len(tables) != 1:
        raise Unloadable("not one symbol table")
    table = tables[0]
    strings = sections[table.link].offset
    symbols = []
    for at in range(table.offset, table.offset + table.size, _SYMBOL.size):
        name, info, _, section, value, _ = _SYMBOL.unpack_from(obj, at)
        symbols.append(_Symbol(_string(obj, strings + name), info >> 4, section, value))
    return symbols


def _resolve(symbol: _Symbol, section_address, places, imports: Mapping[str, int]) -> int | None:
    """The symbol's address; None for one no relocation may use (a section not loaded)."""
    if symbol.section == SHN_ABS:
        return symbol.value
    if symbol.section == SHN_COMMON:
        raise Unloadable(f"common symbol {symbol.name}")
    if symbol.section != SHN_UNDEF:
        return section_address(symbol.section) + symbol.value if symbol.section in places else None
    if not symbol.name:
        return 0
    if symbol.name in imports:
        return imports[symbol.name]
    address = process_symbol(symbol.name)
    if not address:
        raise Unloadable(f"the symbol '{symbol.name}' is defined nowhere in the process")
    return address


def _relocate(obj, rela: _Section, target: mmap.mmap, start: int, base: int, resolved) -> None:
    """Apply `rela` to its section, mapped at `start` of `target` and loaded at `base`."""
    for at in range(rela.offset, rela.offset + rela.size, _RELA.size):
        offset, info, addend = _RELA.unpack_from(obj, at)
        kind, symbol = info & 0xFFFFFFFF, info >> 32
        value = resolved[symbol]
        if kind == R_X86_64_NONE:
            continue
        if value is None:
            raise Unloadable("a relocation against a section that is not loaded")
        where = start + offset
        if kind == R_X86_64_64:
            struct.pack_into("<Q", target, where, (value + addend) & (2**64 - 1))
        elif kind == R_X86_64_PC64:
            struct.pack_into("<q", target, where, value + addend - (base + offset))
        elif kind in (R_X86_64_PC32, R_X86_64_PLT32):
            distance = value + addend - (base + offset)
            if not -(2**31) <= distance < 2**31:
                raise Unloadable("a 32-bit relative reference out of reach")
            struct.pack_into("<i", target, where, distance)
        else:
            raise Unloadable(f"relocation kind {kind}")


def _anonymous(size: int) -> mmap.mmap:
    """Private memory: a forked child gets its own copy of the code's variables."""
    size = max(_round_up(size, _PAGE), _PAGE)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    return mmap.mmap(-1, size, flags=flags, prot=mmap.PROT_READ | mmap.PROT_WRITE)


def _address(m: mmap.mmap) -> int:
    view = (ctypes.c_char * len(m)).from_buffer(m)
    address = ctypes.addressof(view)
    del view  # a live export would keep the map from closing
    return address


def _protect(address: int, size: int, prot: int) -> None:
    if _libc().mprotect(ctypes.c_void_p(address), ctypes.c_size_t(size), prot) != 0:
        raise Unloadable(f"mprotect failed (errno {ctypes.get_errno()})")


def _unmap(maps: list[mmap.mmap]) -> None:
    for m in maps:
        m.close()


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def _string(obj: bytes, at: int) -> str:
    return obj[at : obj.index(b"\0", at)].decode()


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def process_symbol(name: str) -> int:
    """The address of the C symbol `name` among the process's global libraries (libm loaded
    first, as LLVM's linker sees it), 0 where there is none."""
    _libm()
    try:
        return ctypes.cast(_libc()[name], ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


@functools.cache
def _libm() -> None:
    try:
        ctypes.CDLL("libm.so.6", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass
