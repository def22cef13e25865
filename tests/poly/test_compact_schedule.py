"""isl's AST from the placed statements' schedules without their constant dimensions
(`poly.compact_schedule`): the same loop nest, the loops numbered by position."""

from __future__ import annotations

import re

import islpy as isl
import pytest

from examples import gpu_attention
from schedlang.poly.compact_schedule import compact_schedules
from tests.cuda import kernels


def _ast(maps: list[isl.Map]) -> str:
    union = maps[0].to_union_map()
    for m in maps[1:]:
        union = union.union(m.to_union_map())
    build = isl.AstBuild.from_context(isl.Set("{ : }"))
    return re.sub(r"\bc\d+\b", "c", build.node_from_schedule_map(union).to_C_str())


def test_each_group_leaves_out_its_own_constants():
    """S0 is alone after the first dimension, S1 and S2 agree on their third: each keeps
    only its loops and the constants that order the group it is in."""
    maps = [
        isl.Map("{ S0[i] -> [0, i, 0, 0] : 0 <= i < 8 }"),
        isl.Map("{ S1[i] -> [1, i, 0, 0] : 0 <= i < 7 }"),
        isl.Map("{ S2[i, j] -> [1, i, 0, j] : 0 <= i < 7 and 0 <= j < 5 }"),
        isl.Map("{ S3[i] -> [1, i, 1, 0] : 0 <= i < 7 }"),
    ]
    compact = compact_schedules(maps)
    assert compact.dims == {"S0": (0, 1), "S1": (0, 1, 2, 3), "S2": (0, 1, 2, 3), "S3": (0, 1, 2)}
    assert {m.dim(isl.dim_type.out) for m in compact.maps} == {4}  # padded to one length
    assert _ast(compact.maps) == _ast(maps)


def test_a_map_without_constants_is_kept():
    maps = [isl.Map("{ S0[i, j] -> [i, j] : 0 <= i < 8 and 0 <= j < i }")]
    compact = compact_schedules(maps)
    assert compact.dims == {"S0": (0, 1)}
    assert compact.maps[0].plain_is_equal(maps[0])


def _placed_maps(s, args):
    """The placed statements' schedules of `s` and the loop nest isl makes of them."""
    from schedlang.driver import lower
    from schedlang.loopir import from_isl

    seen = []
    real = from_isl.compact_schedules

    def spy(maps):
        seen.extend(maps)
        return real(maps)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(from_isl, "compact_schedules", spy)
        lower(s, args)
    return seen


@pytest.mark.parametrize(
    "make",
    [
        lambda: _io(gpu_attention.tensor_core_attention(2, 192, 64, causal=False)),
        lambda: _io(gpu_attention.tensor_core_attention(2, 192, 64, causal=True)),
        lambda: _kernel(kernels.te_gemm),
        lambda: _kernel(kernels.gemm_double_buffered),
        lambda: _kernel(kernels.row_sum_rfactor),
        lambda: _kernel(kernels.blur),
    ],
    ids=["attention", "attention-causal", "te-gemm", "double-buffered", "rfactor", "blur"],
)
def test_the_ast_is_the_full_maps_one(make):
    """isl gives the same loop nest (its iterators renumbered) from the compacted maps as from
    the placed ones, on kernels with steps of a scan, tails, symbolic sizes and reductions."""
    maps = _placed_maps(*make())
    assert len(compact_schedules(maps).maps) == len(maps) > 1
    assert _ast(compact_schedules(maps).maps) == _ast(maps)


def _io(tensors):
    return gpu_attention.wgmma_schedule(*tensors), [*tensors[:3], tensors[-1]]


def _kernel(make):
    s, inputs, outputs = make()
    return s, inputs + outputs
