"""Out-of-bounds reads in the algorithm, found exactly with isl before anything runs."""

from __future__ import annotations

import islpy as isl

from ..errors import AlgorithmError
from .affine import aff_text
from .space import Params
from .statements import Statement


def _shape_set(op, params: Params) -> isl.Set:
    dims = [f"e{k}" for k in range(len(op.shape))]
    cons = " and ".join(
        f"0 <= {d} < {aff_text(extent, params.names)}" for d, extent in zip(dims, op.shape)
    )
    text = f"{params.prefix} {{ {params.tensor(op)}[{', '.join(dims)}] : {cons or '0 = 0'} }}"
    return isl.Set(text)


def check_bounds(statements: list[Statement], params: Params) -> None:
    """Raise `AlgorithmError` for a read outside its tensor, naming one offending point.

    Reads are restricted to the affine conditions that guard them (``if_then_else`` and
    ``where=``), so padding written with ``if_then_else`` is accepted.
    """
    shapes: dict = {}
    for st in statements:
        for acc in st.reads:
            if acc.op not in shapes:
                shapes[acc.op] = _shape_set(acc.op, params)
            outside = acc.relation.intersect_params(params.context).subtract_range(shapes[acc.op])
            if outside.is_empty():
                continue
            point = outside.wrap().sample_point()
            raise AlgorithmError(_message(st, acc, point, params))


def _message(st: Statement, acc, point: isl.Point, params: Params) -> str:
    n_params = point.get_space().dim(isl.dim_type.param)
    sizes = [
        f"{point.get_space().get_dim_name(isl.dim_type.param, k)}="
        f"{point.get_coordinate_val(isl.dim_type.param, k).to_python()}"
        for k in range(n_params)
    ]
    coords = [
        point.get_coordinate_val(isl.dim_type.set, k).to_python()
        for k in range(point.get_space().dim(isl.dim_type.set))
    ]
    n_root = len(st.root_vars)
    values = []
    op = st.stage.op
    lows = [0] * len(op.axis) + [iv.dom.min for iv in op.reduce_axis]
    for v, c, low in zip(st.root_vars, coords[:n_root], lows):
        shift = low if isinstance(low, int) else getattr(low, "value", None)
        values.append(f"{v.name}={c + shift}" if shift is not None else f"{v.name}={c}+min")
    element = ", ".join(str(c) for c in coords[n_root:])
    shape = ", ".join(str(e) for e in acc.op.shape)
    at = ", ".join(values + sizes)
    return (
        f"compute '{st.op.name}' reads '{acc.read}' out of bounds: at {at} it reads "
        f"{acc.op.name}[{element}], outside its shape ({shape}); guard the read with "
        "sl.if_then_else or shrink the compute's domain"
    )
