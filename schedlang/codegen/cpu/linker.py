"""Machine code into the process: `object_loader` where it can, LLVM's JIT linker otherwise.

Both give a handle that keeps the code mapped while it lives, and the addresses asked for. The
loader needs no LLVM, which a kernel revived from disk then never imports (`jit`)."""

from __future__ import annotations

from collections.abc import Mapping

from . import object_loader


def link(obj: bytes, symbol: str, imports: Mapping[str, int], text: str) -> tuple[object, int]:
    """Load `obj` (compiled from the IR `text`, shown if LLVM's linker fails) into the
    process: the handle keeps it loaded, the int is `symbol`'s address."""
    linked, addresses = link_symbols(obj, (symbol,), imports, text)
    return linked, addresses[symbol]


def link_symbols(
    obj: bytes, symbols: tuple[str, ...], imports: Mapping[str, int], text: str
) -> tuple[object, dict[str, int]]:
    """`link` for code that exports several `symbols`: their addresses by name."""
    try:
        return object_loader.load(obj, symbols, imports)
    except object_loader.Unloadable:
        from . import jit

        return jit.link_symbols(obj, symbols, imports, text)
