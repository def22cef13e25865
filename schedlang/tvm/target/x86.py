"""``tvm.target.x86.get_simd_32bit_lanes``: how many 32-bit values one vector register of the
CPU holds, which TOPI's x86 schedules tile by."""

from __future__ import annotations

from .codegen import target_has_features


def get_simd_32bit_lanes() -> int:
    """16 with AVX-512, 8 with AVX2, else 4 (SSE)."""
    if target_has_features(["avx512bw", "avx512f"]):
        return 16
    if target_has_features("avx2"):
        return 8
    return 4
