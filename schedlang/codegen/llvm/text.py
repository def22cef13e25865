"""An LLVM module as text, its objects released at once.

llvmlite's IR objects form cycles (an instruction points at its block, the block at its
function, the function at its module), so a module no longer needed waits for Python's cycle
collector, which then walks each of its objects: five or so per instruction, and an unrolled
GPU kernel has ten thousand instructions. The code generators keep only the text, so
`module_text` prints the module and empties its lists, and reference counting frees the rest.
"""

from __future__ import annotations

from llvmlite import ir


def module_text(module: ir.Module) -> str:
    """`module` printed; the module is left empty (its functions without blocks)."""
    text = str(module)
    for function in module.functions:
        for block in function.blocks:
            block.instructions = []
        function.blocks = []
    module.globals.clear()
    return text
