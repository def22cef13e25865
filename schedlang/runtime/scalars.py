"""Numbers for scalar parameters: a kernel whose algorithm reads a scalar parameter
(``alpha = sl.var("alpha", "float32")``, a 0-d input) is called with a number in its place,
``kernel(a, 2.5, c)``, as TE's kernels are.

The number becomes a 0-d array of the parameter's dtype (rounded to it, as a C call would
convert it) before anything else looks at the arguments, so every later check and both
targets' paths see an array as for any input. Only inputs take numbers: a 0-d output is
written, and a number could not receive the result.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from ..ir import dtype as dt
from ..loopir.core.nodes import LoweredFunc


class ScalarArguments:
    """Where `func`'s calls may pass numbers: in a whole call, and with the inputs alone
    (`inputs` the positions of the parameters such a call passes)."""

    def __init__(self, func: LoweredFunc, written: Sequence[bool], inputs: Sequence[int]) -> None:
        params = func.params
        self.func = func
        self.whole = tuple(k for k, b in enumerate(params) if not b.shape and not written[k])
        self.alone = tuple(i for i, k in enumerate(inputs) if k in self.whole)
        self.count, self.inputs = len(params), list(inputs)

    def arrays(self, arrays: tuple) -> tuple:
        """`arrays` with the numbers at scalar parameters as 0-d arrays."""
        if not self.whole:
            return arrays
        if len(arrays) == self.count:
            pairs = [(k, k) for k in self.whole]
        elif len(arrays) == len(self.inputs):
            pairs = [(i, self.inputs[i]) for i in self.alone]
        else:
            return arrays
        out = list(arrays)
        for position, k in pairs:
            value = out[position]
            if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, complex):
                buffer = self.func.params[k]
                out[position] = np.array(value, dt.to_numpy(buffer.dtype))
        return tuple(out)
