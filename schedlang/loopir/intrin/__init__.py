"""Intrinsic calls settled before code generation: declared intrinsics and targets' math rules."""
