"""The loop-IR passes only GPU targets run, between lowering and code generation.

Local buffers live in registers, which a thread can only index with constants: register tiles
are computed whole (`register_guards`), the loops that index them are unrolled (`registers`,
`unroll`), and the tiles that lie wholly inside the tensors get a version free of guards
(`full_tiles`); guards true at every point of their loops go (`true_guards`). Other loops
marked unrolled stay loops, for LLVM to unroll (`registers.left_to_llvm`). The copies
unrolling makes share their guards (`merge_guards`). The simplifications share what they
folded.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.nodes import LoweredFunc
from ..core.simplify import simplify
from ..index.divmod import simplify_divisions
from ..loops.full_tiles import split_full_tiles
from ..loops.true_guards import drop_true_guards
from ..loops.unroll import unroll_loops
from ..memory.registers import left_to_llvm, mark_register_loops
from .merge_guards import merge_guards
from .register_guards import drop_register_guards


def gpu_passes(func: LoweredFunc) -> LoweredFunc:
    folded: dict = {}
    body = mark_register_loops(drop_register_guards(drop_true_guards(func.body)))
    body = unroll_loops(body, folded, keep=left_to_llvm)  # simplified, sharing `folded`
    body = merge_guards(body)
    body = simplify(split_full_tiles(simplify_divisions(body)), folded)
    return replace(func, body=body)
