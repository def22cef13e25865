"""``tvm._ffi.base``: TE's error class, schedlang's `SchedlangError` (a `RuntimeError`)."""

from __future__ import annotations

from ...errors import SchedlangError as TVMError

__all__ = ["TVMError"]
