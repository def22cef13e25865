"""``tvm.error``: TE's error classes, which are schedlang's (every one a `RuntimeError`)."""

from __future__ import annotations

from ..errors import InternalError
from ..errors import SchedlangError as TVMError

__all__ = ["InternalError", "TVMError"]
