"""``tvm.tir.ir_builder``: the builder of a tensor intrinsic's body (`tensor_intrin`)."""

from __future__ import annotations

from ..tensor_intrin import IRBuilder


def create() -> IRBuilder:
    return IRBuilder()
