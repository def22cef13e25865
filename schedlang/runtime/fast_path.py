"""What a CPU kernel's guard checks (`codegen.cpu.trampoline`), worked out once at build.

The usual call passes plain numpy arrays of the parameters' dtypes and ranks, C-contiguous,
outputs writable and apart from the other arguments, every size of the kernel a dimension of
some parameter and every dimension a constant or one size. For such a kernel, `guard_spec`
lists what each dimension must be and which gives each size, with the limits of
`runtime.size_limits`; the guard checks all of it in machine code and starts the kernel. A
kernel with sizes that no array shows (passed by name), dimensions that are expressions of
sizes, or size limits of another kind has no guard: its calls take the general path
(`arguments.check_arguments`), as does every call the guard does not recognise, so no check is
ever lost, only moved.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..codegen.cpu.guard_spec import GuardSpec
from ..ir import dtype as dt
from ..ir.expr import Const, Var
from ..loopir.core.nodes import LoweredFunc
from .size_limits import SizeLimits


def guard_spec(
    func: LoweredFunc, written: Sequence[bool], limits: SizeLimits, derived: bool = False
) -> GuardSpec | None:
    """The guard's checks for `func`, or None where its calls must take the general path;
    with `derived`, also for a kernel whose limits evaluate expressions of the sizes (the
    caller then checks those itself, as `usual_calls` does with `SizeLimits.check`)."""
    if limits.derived and not derived:
        return None
    position = {v: k for k, v in enumerate(func.sizes)}
    shown = set()
    params = []
    for buffer, out in zip(func.params, written):
        dims = []
        for extent in buffer.shape:
            if isinstance(extent, Const):
                dims.append((int(extent.value), -1))
            elif isinstance(extent, Var) and extent in position:
                dims.append((0, position[extent]))
                shown.add(extent)
            else:
                return None
        params.append((np.dtype(dt.to_numpy(buffer.dtype)), bool(out), tuple(dims)))
    if len(shown) != len(func.sizes):
        return None
    return GuardSpec(tuple(params), limits.size_limits(), limits.count_limit())
