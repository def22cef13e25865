"""``tvm.contrib``: the helpers TE programs use around building (`utils`, `cc`)."""

from . import cc, utils

__all__ = ["cc", "utils"]
