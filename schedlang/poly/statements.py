"""Statements of a schedule's stages, with iteration domains and access relations in isl.

A compute stage is one statement; a reduction is two, ``init`` (the identity, over the data
axes) and ``update`` (over data and reduce axes, reading and writing its own element). Inlined
stages are substituted into their consumers first, so they have no statement. Domains live in a
per-stage *root space* ``R<k>[data axes, reduce axes]`` whose reduce dimensions are shifted to
start at 0; `root_names` gives the isl text of every root variable in that space.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..errors import AlgorithmError, InternalError
from ..ir.data_index import clamp_data_reads, is_data_dependent
from ..ir.expr import Expr, Read, Reduce, Select, Var
from ..ir.printer import expr_str
from ..ir.tensor import ComputeOp, Operation, Tensor
from ..ir.visit import children, substitute, transform
from ..schedule import records as rec
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .affine import NonAffine, aff_text, cond_text
from .space import Params


@dataclass
class Access:
    """A read of `tensor` at `read` (a node of the statement's value), as a relation from the
    statement's root space to the tensor's elements, restricted to where the read is evaluated."""

    read: Read
    op: Operation
    relation: isl.Map


@dataclass
class Statement:
    name: str
    stage: Stage
    role: str  # "compute", "init" or "update"
    root_vars: tuple[Var, ...]  # in root-space order
    root_space: str  # isl tuple name of the root space
    domain: isl.Set  # in the root space
    value: Expr  # compute: the body; init: the identity; update: the reduction source
    where: Expr | None = None  # update only
    reads: list[Access] = field(default_factory=list)
    write: isl.Map | None = None  # root space -> the tensors it writes
    # The tensors it writes: one, except the update of a reduction over tuples, which
    # combines every output of its stage at once.
    writes: tuple[Operation, ...] = ()
    other_writes: list[isl.Map] = field(default_factory=list)  # the writes of writes[1:]
    sources: tuple[Expr, ...] = ()  # an update over tuples: each component's source

    @property
    def op(self) -> Operation:
        """The (first) tensor the statement writes."""
        return self.writes[0]


def inline_bodies(schedule: Schedule) -> dict[Operation, Expr]:
    """Each op's body with inlined stages substituted (transitively)."""
    bodies: dict[Operation, Expr] = {}
    for stage in schedule.stages:
        for op in stage.ops:
            if isinstance(op, ComputeOp):
                bodies[op] = _inline(clamp_data_reads(op.expr), bodies, schedule)
    return bodies


def _inline(body: Expr, bodies: dict[Operation, Expr], schedule: Schedule) -> Expr:
    def replace(node: Expr) -> Expr | None:
        if not isinstance(node, Read):
            return None
        producer = schedule[node.tensor.op]
        if not isinstance(producer.attach, rec.ComputeInline):
            return None
        mapping = {iv.var: index for iv, index in zip(producer.op.axis, node.indices)}
        return substitute(bodies[node.tensor.op], mapping)

    return transform(body, replace)


def build_statements(
    schedule: Schedule,
    bodies: dict[Operation, Expr],
    params: Params,
    first_step: dict[str, Expr] | None = None,
) -> list[Statement]:
    """The statements of every scheduled (non-inlined) compute stage, in stage order. A stage
    in `first_step` (a scan's body) runs the steps of its first axis from that step on."""
    statements: list[Statement] = []
    for k, stage in enumerate(schedule.stages):
        op = stage.op
        if not isinstance(op, ComputeOp) or isinstance(stage.attach, rec.ComputeInline):
            continue
        start = len(statements)
        if isinstance(op.expr, Reduce):
            _reduction(statements, stage, f"R{k}", bodies, params)
        else:
            for each in stage.ops:
                _elementwise(statements, stage, each, f"R{k}", bodies[each], params)
        if first_step and stage.name in first_step:
            for st in statements[start:]:
                _from_step(st, first_step[stage.name], params)
    return statements


def _from_step(st: Statement, step: Expr, params: Params) -> None:
    """Restrict `st` to the steps from `step` on (its first root dimension)."""
    dims = _set_dims(st.domain)
    first = dims.split(", ")[0]
    space = st.domain.get_tuple_name()
    keep = isl.Set(f"{params.prefix} {{ {space}[{dims}] : {first} >= {_param_aff(step, params)} }}")
    st.domain = st.domain.intersect(keep)
    st.write = st.write.intersect_domain(st.domain)
    st.other_writes = [w.intersect_domain(st.domain) for w in st.other_writes]
    for acc in st.reads:
        acc.relation = acc.relation.intersect_domain(st.domain)


def _elementwise(
    statements: list[Statement],
    stage: Stage,
    op: ComputeOp,
    space: str,
    body: Expr,
    params: Params,
) -> None:
    """The statement computing `op`, one of the stage's outputs, elementwise."""
    data = tuple(iv.var for iv in op.axis)
    names = dict(params.names)
    names.update({v: f"d{n}" for n, v in enumerate(data)})
    data_dom = _domain(space, [(names[iv.var], iv.dom.extent) for iv in op.axis], params)
    stmt = Statement(f"S{len(statements)}", stage, "compute", data, space, data_dom, body)
    stmt.writes = (op,)
    stmt.write = _write(stmt, names, params)
    stmt.reads = _accesses(body, data_dom, names, params)
    statements.append(stmt)


def _reduction(
    statements: list[Statement],
    stage: Stage,
    space: str,
    bodies: dict[Operation, Expr],
    params: Params,
) -> None:
    """A reduction's statements: an init per output, and one update that combines them all
    (the components of a reduction over tuples are combined together)."""
    op = stage.op
    body = bodies[op]
    data = tuple(iv.var for iv in op.axis)
    red = tuple(iv.var for iv in op.reduce_axis)
    names = dict(params.names)
    names.update({v: f"d{n}" for n, v in enumerate(data)})
    data_dom = _domain(space, [(names[iv.var], iv.dom.extent) for iv in op.axis], params)
    full = dict(names)
    bounds = [(names[iv.var], iv.dom.extent) for iv in op.axis]
    for n, iv in enumerate(op.reduce_axis):
        full[iv.var] = f"(r{n} + {_param_aff(iv.dom.min, params)})"
        bounds.append((f"r{n}", iv.dom.extent))
    full_dom = _domain(space, bounds, params)
    # An affine where= shrinks the loops themselves (a prefix sum runs n(n+1)/2 updates, not
    # n^2 guarded ones). It stays a guard too: a cross-thread reduction runs its bound loop
    # over the whole block, and LLVM drops the guards it can prove.
    if body.where is not None:
        full_dom = _restrict(full_dom, body.where, full, params)
    init_dom = data_dom.set_tuple_name(f"{space}I")
    for each in stage.ops:
        identity = bodies[each].combiner.identity
        init = Statement(
            f"S{len(statements)}", stage, "init", data, f"{space}I", init_dom, identity
        )
        init.writes = (each,)
        init.write = _write(init, names, params)
        statements.append(init)
    update = Statement(
        f"S{len(statements)}",
        stage,
        "update",
        data + red,
        space,
        full_dom,
        body.source,
        body.where,
    )
    update.writes = stage.ops
    update.sources = tuple(bodies[each].source for each in stage.ops)
    update.write = _write(update, full, params)
    update.other_writes = [_write(update, full, params, each) for each in stage.ops[1:]]
    for each, write in zip(stage.ops, [update.write, *update.other_writes]):
        own = Read(Tensor(each), tuple(data), each.dtype)
        update.reads.append(Access(own, each, write))
    for each in stage.ops:
        update.reads += _accesses(bodies[each].source, update.domain, full, params)
    statements.append(update)


def _param_aff(e: Expr, params: Params) -> str:
    """A bound of a domain (an extent, a reduction's start, a scan's first step), which
    must be affine in the sizes for isl to iterate over it."""
    try:
        return aff_text(e, params.names)
    except NonAffine:
        raise AlgorithmError(
            f"the extent '{expr_str(e)}' is not an affine function of the sizes (sums, "
            "constant multiples, // and % by constants), so no loop can run over it; make it "
            "a size of its own (sl.var) and pass arrays of that size"
        ) from None


def _domain(space: str, bounds: list[tuple[str, Expr]], params: Params) -> isl.Set:
    dims = ", ".join(name for name, _ in bounds)
    cons = " and ".join(f"0 <= {name} < {_param_aff(ext, params)}" for name, ext in bounds)
    return isl.Set(f"{params.prefix} {{ {space}[{dims}] : {cons or '0 = 0'} }}").intersect_params(
        params.context
    )


def _write(
    stmt: Statement, names: dict[Var, str], params: Params, op: Operation | None = None
) -> isl.Map:
    """root space -> the elements of `op` (the statement's first tensor by default)."""
    op = op or stmt.op
    dims = ", ".join(_dim_names(stmt))
    target = ", ".join(names[iv.var] for iv in op.axis)
    tensor = params.tensor(op)
    text = f"{params.prefix} {{ {stmt.root_space}[{dims}] -> {tensor}[{target}] }}"
    return isl.Map(text).intersect_domain(stmt.domain)


def _dim_names(stmt: Statement) -> list[str]:
    n_data = len(stmt.stage.op.axis)
    return [f"d{n}" for n in range(n_data)] + [f"r{n}" for n in range(len(stmt.root_vars) - n_data)]


def _restrict(domain: isl.Set, cond: Expr, names, params: Params, negate: bool = False) -> isl.Set:
    """`domain` where `cond` holds (or not); unchanged if `cond` is not affine."""
    try:
        text = cond_text(cond, names)
    except NonAffine:
        return domain
    dims = _set_dims(domain)
    if negate:
        text = f"not ({text})"
    space = domain.get_tuple_name()
    return domain.intersect(isl.Set(f"{params.prefix} {{ {space}[{dims}] : {text} }}"))


def _accesses(value: Expr, domain: isl.Set, names, params: Params) -> list[Access]:
    """Every tensor read in `value`, each restricted to the affine conditions guarding it."""
    found: list[Access] = []

    def visit(e: Expr, where: isl.Set) -> None:
        if isinstance(e, Select):
            visit(e.cond, where)
            visit(e.true_value, _restrict(where, e.cond, names, params))
            visit(e.false_value, _restrict(where, e.cond, names, params, negate=True))
            return
        if isinstance(e, Read):
            found.append(Access(e, e.tensor.op, _relation(e, where, names, params)))
        for child in children(e):
            visit(child, where)

    visit(value, domain)
    return found


def _relation(read: Read, where: isl.Set, names, params: Params) -> isl.Map:
    """The elements `read` touches; along a data-dependent index (clamped into the tensor),
    every element of that dimension."""
    outs, cons = [], []
    for k, (index, extent) in enumerate(zip(read.indices, read.tensor.shape)):
        outs.append(f"__o{k}")
        if is_data_dependent(index):
            cons.append(f"0 <= __o{k} < {aff_text(extent, params.names)}")
            continue
        try:
            cons.append(f"__o{k} = {aff_text(index, names)}")
        except NonAffine as err:  # `is_data_dependent` would have kept it in bounds
            raise InternalError(
                f"the index '{index}' of '{read}' is neither affine ({err.expr}) nor data-dependent"
            ) from None
    dims = _set_dims(where)
    space = where.get_tuple_name()
    tensor = params.tensor(read.tensor.op)
    text = (
        f"{params.prefix} {{ {space}[{dims}] -> {tensor}[{', '.join(outs)}] : "
        f"{' and '.join(cons) or '0 = 0'} }}"
    )
    return isl.Map(text).intersect_domain(where)


def _set_dims(s: isl.Set) -> str:
    return ", ".join(s.get_dim_name(isl.dim_type.set, d) for d in range(s.dim(isl.dim_type.set)))
