"""`poly.box_copy`: the proof that a staged fill is one box copy of a tensor, over the loops
around the fill."""

from __future__ import annotations

from schedlang.ir.expr import Var, const
from schedlang.poly.box_copy import box_copy_mismatch

R, C, F, P = (Var(n, "int32", "loop") for n in ("r", "c", "f", "p"))


def _padded_rows_fill(context):
    """A 4 x 64 box of a 14 x 256 tensor at row `p` - 1 (rows outside read as zeros) and
    column 128 * (`f` // 2), written as isl prints it: only the rows are checked, because the
    column lies inside for every block `f` the kernel has (0 to 3)."""
    column = F * 64 - (F % 2) * 64
    row = P - 1
    inside_rows = (row + R >= 0) & (row + R < 14)
    return box_copy_mismatch(
        loops=[(R, const(0), const(4)), (C, const(0), const(64))],
        guards=[],
        dst_idx=[R, C],
        src_idx=[row + R, column + C],
        origin=[row, column],
        src_shape=[const(14), const(256)],
        shape=[4, 64],
        when=inside_rows,
        context=context,
    )


def test_the_loops_around_the_fill_bound_its_origin():
    assert _padded_rows_fill([(F, const(0), const(4)), (P, const(0), const(14))]) is None


def test_without_them_a_column_past_the_tensor_is_possible():
    assert "pads with zeros where the copy engine would not" in _padded_rows_fill([])


def test_a_block_past_the_tensor_is_still_refused():
    assert "pads with zeros" in _padded_rows_fill([(F, const(0), const(6))])


def test_a_loop_around_whose_bounds_isl_cannot_read_bounds_nothing():
    n = Var("n", "int32", "size")
    opaque = (P, const(0), n * n)  # not affine: left out of the context, not an error
    assert _padded_rows_fill([(F, const(0), const(4)), opaque]) is None
