"""``tvm.topi``: the helpers of TVM's operator library that TE programs import (`utils`)."""

from . import utils

__all__ = ["utils"]
