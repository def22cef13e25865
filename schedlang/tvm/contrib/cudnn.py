"""``tvm.contrib.cudnn``: cuDNN's operators, which schedlang does not link (`exists` says so,
every operator is refused); TOPI's CUDA computes and schedules of the same operators build."""

from __future__ import annotations

from .unlinked import refusing

_INSTEAD = "compute the operator with TOPI's te computes and CUDA schedules (topi.cuda) instead"


def exists() -> bool:
    """Whether cuDNN can be called: never, from schedlang (TOPI checks before choosing it)."""
    return False


algo_to_index = refusing("cuDNN", "cudnn.algo_to_index", _INSTEAD)
conv_forward = refusing("cuDNN", "cudnn.conv_forward", _INSTEAD)
conv_backward_data = refusing("cuDNN", "cudnn.conv_backward_data", _INSTEAD)
conv_backward_filter = refusing("cuDNN", "cudnn.conv_backward_filter", _INSTEAD)
softmax = refusing("cuDNN", "cudnn.softmax", _INSTEAD)
log_softmax = refusing("cuDNN", "cudnn.log_softmax", _INSTEAD)
