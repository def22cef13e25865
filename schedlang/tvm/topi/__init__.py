"""``tvm.topi``: the parts of TVM's operator library that TE programs import: `utils`, the
operators AutoTVM's templates build on (`nn`) and their numpy references (`testing`)."""

from . import nn, testing, utils

__all__ = ["nn", "testing", "utils"]
