"""``tvm._ffi``: where TE code also finds the error class (``tvm._ffi.base.TVMError``) and
the registry of Python functions (``tvm._ffi.register_func``)."""

from __future__ import annotations

from ..packed import get_global_func, register_func
from . import base

__all__ = ["base", "get_global_func", "register_func"]
