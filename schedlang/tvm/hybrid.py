"""``tvm.te.hybrid``: TE's hybrid script (Python loops parsed into TE). schedlang does not run
it: a function decorated with `script` imports, as modules that define one do, and is refused
by name when it is called."""

from __future__ import annotations

import functools

from ..errors import AlgorithmError


def script(pyfunc):
    @functools.wraps(pyfunc)
    def refused(*args, **kwargs):
        raise AlgorithmError(
            f"te.hybrid.script function '{pyfunc.__name__}': schedlang does not run TE's hybrid "
            "script; write it with te.compute (or te.extern for a call to a packed function)"
        )

    return refused
