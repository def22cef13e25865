"""An LLVM module as text, its objects released at once.

llvmlite's IR objects form cycles (an instruction points at its block, the block at its
function, the function at its module), so a module no longer needed waits for Python's cycle
collector, which then walks each of its objects: five or so per instruction, and an unrolled
GPU kernel has ten thousand instructions. The code generators keep only the text, so
`module_text` prints the module and empties its lists, and reference counting frees the rest.
A block and its terminator (which names the block as its parent), and a loop's phi and the
increment it reads, are cycles of their own, which held every instruction reachable from them
until the collector ran: the terminators and the phis' incoming values are dropped too.
"""

from __future__ import annotations

from llvmlite import ir


def module_text(module: ir.Module) -> str:
    """`module` printed; the module is left empty (its functions without blocks)."""
    text = str(module)
    for function in module.functions:
        for block in function.blocks:
            for instruction in block.instructions:
                if isinstance(instruction, ir.PhiInstr):
                    instruction.incomings = []
            block.instructions = []
            block.terminator = None
        function.blocks = []
    module.globals.clear()
    return text
