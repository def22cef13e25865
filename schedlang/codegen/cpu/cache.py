"""Compiling a lowered function for the CPU, once: an in-memory cache and an optional disk cache.

In memory, compiled code is keyed by `fingerprint` (printed loop IR, types, target) and shared
by the kernels built from one lowered function while any of them lives; the last one to go
unloads it, since a tuner builds thousands and keeps a few. The disk cache (on unless
``SCHEDLANG_CACHE_DIR=off``) also keeps each object file (`disk_cache`: verified on read,
skipped when it cannot be written), under a key that adds the code generator's own source and
the LLVM version, so a new schedlang never loads stale code; a later process then skips LLVM's
optimiser and code generator and only links.
"""

from __future__ import annotations

import functools
import hashlib
import weakref
from collections.abc import Mapping
from pathlib import Path

from llvmlite import __version__ as llvmlite_version

from ...loopir.core.nodes import CallExtern, LoweredFunc
from ...loopir.core.visit import walk_stmt
from .. import disk_cache
from ..fingerprint import fingerprint
from ..llvm.text import module_text
from . import jit as cpu_jit
from . import linker
from .compiled import CompiledCpu, entry_symbol
from .module import build_module

_memory: weakref.WeakValueDictionary[str, CompiledCpu] = weakref.WeakValueDictionary()


def compile_cpu(
    func: LoweredFunc, imports: Mapping[str, int], contract: bool = True
) -> CompiledCpu:
    """`func` compiled for the host; `imports` are the runtime's symbols (name -> address);
    `contract`: whether ``a * b + c`` may fuse (`Target.contract`)."""
    target = cpu_jit.host().target.with_contract(contract)
    key = fingerprint(func, target.key + "".join(func.imports))
    hit = _memory.get(key)
    if hit is not None:
        return hit
    text = module_text(build_module(func, target, target.triple))
    if func.imports:  # the C functions of declared intrinsics, linked in as IR
        text = cpu_jit.linked_text(text, func.imports)
    cpu_jit.check_defined(text, _called(func) - set(imports))
    obj = disk_cache.load_or_make(_disk_path(key), lambda: cpu_jit.object_code(text))
    linked, address = linker.link(obj, entry_symbol(func), imports, text)
    compiled = CompiledCpu(func, key, address, linked, text, obj)
    _memory[key] = compiled
    return compiled


def _called(func: LoweredFunc) -> set[str]:
    """The C functions the declared intrinsics of `func` call."""
    return {s.name for s in walk_stmt(func.body) if isinstance(s, CallExtern)}


def clear_memory_cache() -> None:
    """Forget compiled code (kernels alive keep theirs); for measuring compile time."""
    _memory.clear()


def _disk_path(key: str) -> Path | None:
    folder = disk_cache.directory()
    if folder is None:
        return None
    full = hashlib.sha256(f"{key} {_generator_version()}".encode()).hexdigest()
    return folder / f"{full}.o"


@functools.cache
def _generator_version() -> str:
    sources = sorted(Path(__file__).parents[1].rglob("*.py"))  # all of codegen/
    digest = hashlib.sha256(llvmlite_version.encode())
    for path in sources:
        digest.update(path.read_bytes())
    return digest.hexdigest()
