"""``tvm.topi.nn``: TOPI's neural-network operators, each in the module TOPI keeps it in
(``from tvm.topi.nn import pooling`` works as in TVM)."""

from .batch_matmul import batch_matmul
from .conv2d import conv2d, conv2d_hwcn, conv2d_nchw
from .conv2d_transpose import conv2d_transpose_nchw
from .dense import dense, dense_pack, matmul
from .depthwise_conv2d import depthwise_conv2d_nchw
from .dilate import dilate
from .elemwise import leaky_relu, relu
from .layer_norm import layer_norm
from .local_response_norm import lrn
from .pad import pad
from .pooling import adaptive_pool, global_pool, pool1d, pool2d, pool3d
from .softmax import log_softmax, softmax
from .utils import get_pad_tuple

__all__ = [
    "adaptive_pool",
    "batch_matmul",
    "conv2d",
    "conv2d_hwcn",
    "conv2d_nchw",
    "conv2d_transpose_nchw",
    "dense",
    "dense_pack",
    "depthwise_conv2d_nchw",
    "dilate",
    "get_pad_tuple",
    "global_pool",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "lrn",
    "matmul",
    "pad",
    "pool1d",
    "pool2d",
    "pool3d",
    "relu",
    "softmax",
]
