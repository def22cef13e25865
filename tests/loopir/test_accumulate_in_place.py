"""`accumulate_in_place`: a running accumulator ``O = O * f + B`` whose block B the tensor cores
compute onto zeros becomes ``O = O * f`` and the products onto O, the attention's output
state in one accumulator; every other shape of the run is left as it is."""

from __future__ import annotations

from schedlang.ir.expr import Binary, const
from schedlang.loopir.core.nodes import Buffer, For, Load, MatrixOp, Store, Tile, seq
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.gpu.accumulate_in_place import accumulate_in_place

from .nests import loop_var

ACC = "wgmma.accumulator"
SLOT = loop_var("slot")


def _buffer(name, shape, dtype="float32", scope=ACC) -> Buffer:
    return Buffer(name, tuple(const(n) for n in shape), dtype, scope)


def _tile(buffer) -> Tile:
    return Tile(buffer, (const(0), const(0)), (0, 1), (64, 64))


def _run(factor_reads_block=False, product_reads_state=False, shape=(64, 64)):
    """``(statements, O, B, P)``: fill B; B += P @ V twice; for each slot O = O * f + B."""
    o, b = _buffer("O", shape), _buffer("B", (64, 64))
    m = _buffer("M", (2,))
    p = _buffer("P", (64, 64), "float16")
    v = _buffer("V", (64, 64), "float16", "shared")
    a = o if product_reads_state else p
    products = [MatrixOp("mma", _tile(b), (_tile(a), _tile(v))) for _ in range(2)]
    slot = (SLOT,)
    factor = Load(b, slot, "float32") if factor_reads_block else Load(m, (const(0),), "float32")
    value = Binary("+", Binary("*", Load(o, slot, "float32"), factor, "float32"),
                   Load(b, slot, "float32"), "float32")  # fmt: skip
    update = For(SLOT, const(0), const(32), "unrolled", Store(o, slot, value))
    fill = MatrixOp("fill", _tile(b), value=const(0.0, "float32"))
    return seq(fill, *products, update), o, b


def _names(stmt, kind):
    return [s.dst.buffer.name for s in walk_stmt(stmt) if isinstance(s, MatrixOp) and s.op == kind]


def test_the_products_accumulate_onto_the_rescaled_state():
    body, o, b = _run()
    out = accumulate_in_place(body)
    assert _names(out, "fill") == [] and _names(out, "mma") == ["O", "O"]
    stores = [s for s in walk_stmt(out) if isinstance(s, Store)]
    assert len(stores) == 1 and str(stores[0].value) == "O.slot[slot] * M.slot[0]"
    # the state is scaled before the products run onto it
    assert [type(s).__name__ for s in out.stmts] == ["For", "MatrixOp", "MatrixOp"]


def test_a_run_that_reads_the_block_elsewhere_or_differs_is_left_alone():
    for body, _, _ in (
        _run(factor_reads_block=True),  # f reads B: B must be computed first
        _run(product_reads_state=True),  # a product reads O, which would be scaled first
        _run(shape=(32, 128)),  # another shape: the slots hold other elements
    ):
        assert accumulate_in_place(body) is body
    body, _, b = _run()
    extra = Store(_buffer("Out", (64,), scope="global"), (SLOT,), Load(b, (SLOT,), "float32"))
    kept = seq(body, For(SLOT, const(0), const(32), "unrolled", extra))
    assert _names(accumulate_in_place(kept), "mma") == ["B", "B"]
