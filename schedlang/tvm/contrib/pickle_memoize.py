"""``tvm.contrib.pickle_memoize.memoize``: a function's results kept by its arguments, so that
work done once (TOPI's Winograd matrices) is not repeated. TVM also pickles them to a file at
exit when asked; schedlang keeps them for the life of the process."""

from __future__ import annotations

import functools


def memoize(key: str, save_at_exit: bool = False):
    """Decorate a function of hashable arguments so that each result is computed once."""

    def decorate(function):
        return functools.lru_cache(maxsize=None)(function)

    return decorate
