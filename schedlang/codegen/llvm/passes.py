"""Running an LLVM pass pipeline through llvmlite, and freeing it afterwards.

llvmlite never frees a pass manager's native object: in `ModulePassManager`'s method order
`ObjectRef`'s empty ``_dispose`` comes before `NewPassManager`'s real one, so garbage
collection detaches the Python object and leaves the passes allocated. The ``-O3`` pipeline is
about 80 KB of them, kept for the life of the process once per kernel compiled, which is what a
tuner building thousands of kernels ran out of. `run_passes` frees them itself.
"""

from __future__ import annotations

import llvmlite.binding as llvm


def run_passes(
    passes: llvm.ModulePassManager, module: llvm.ModuleRef, builder: llvm.PassBuilder
) -> None:
    """Run `passes` over `module`, then free them (`passes` is closed afterwards)."""
    try:
        passes.run(module, builder)
    finally:
        llvm.NewPassManager._dispose(passes)
        passes.detach()  # disposed: llvmlite must not touch the pointer again
