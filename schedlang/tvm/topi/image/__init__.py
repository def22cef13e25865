"""``tvm.topi.image``: image operators (`resize2d`)."""

from .resize import resize2d

__all__ = ["resize2d"]
