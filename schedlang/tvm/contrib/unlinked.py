"""The ``tvm.contrib`` modules of libraries schedlang does not link (oneDNN, MKL): their
functions exist, so that code importing them loads, and each call says the library is not
available instead of computing anything."""

from __future__ import annotations

from ...errors import LoweringError


def refusing(library: str, name: str, instead: str):
    """A function `name` of `library` that refuses every call, pointing at `instead`."""

    def call(*_args, **_kwargs):
        raise LoweringError(
            f"tvm.contrib.{name}: {library} is not available (schedlang does not link it); "
            f"{instead}"
        )

    call.__name__ = name.rpartition(".")[2]
    call.__qualname__ = call.__name__
    return call
