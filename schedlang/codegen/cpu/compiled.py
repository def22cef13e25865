"""`CompiledCpu`: a lowered function's machine code linked into this process, and the name of
its entry point. Apart from the code generator (`module`, `cache`), so that a kernel revived
from disk (`runtime.saved`, `build_cache`) links its object code without importing the LLVM IR
translator."""

from __future__ import annotations

import re

from ...loopir.core.nodes import LoweredFunc


def entry_symbol(func: LoweredFunc) -> str:
    """The exported name of `func`'s entry point."""
    return "sl_" + re.sub(r"\W", "_", func.name)


class CompiledCpu:
    """A lowered function compiled and linked into this process, until this object goes."""

    def __init__(
        self, func: LoweredFunc, key: str, address: int, linked: object, text: str, obj: bytes
    ) -> None:
        self.func, self.key, self.address = func, key, address
        self.symbol = entry_symbol(func)
        self.llvm_ir = text
        self.object_code = obj  # what a saved kernel stores
        self._linked = linked  # keeps the machine code mapped

    @property
    def asm(self) -> str:
        from . import jit as cpu_jit

        return cpu_jit.assembly(self.llvm_ir)

    @property
    def optimized_ir(self) -> str:
        from . import jit as cpu_jit

        return cpu_jit.optimized_ir(self.llvm_ir)
