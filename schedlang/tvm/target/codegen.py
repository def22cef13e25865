"""``tvm.target.codegen.target_has_features``: whether the CPU code is compiled for has some
features. schedlang compiles CPU kernels for the CPU it runs on, with every instruction set it
has (the target's options only name what it must have), so that CPU's features answer."""

from __future__ import annotations

from ..cpu_options import host_features


def target_has_features(cpu_features, target=None) -> bool:
    """Whether the CPU has every feature named (a name or a list of names, LLVM's: "avx2")."""
    names = [cpu_features] if isinstance(cpu_features, str) else list(cpu_features)
    features = host_features()
    return all(features.get(name, False) for name in names)
