"""`epilogue_in_place`: a fragment H computed slot by slot from a float32 accumulator and only
stored (``H[s] = bfloat16(acc[s] * sa)``; ``C = store_matrix(H)``) is computed into the
accumulator instead and the store converts it; every other shape of the run is left alone."""

from __future__ import annotations

from schedlang.ir.expr import Binary, Cast, const
from schedlang.loopir.core.nodes import Buffer, For, Load, MatrixOp, Store, Tile, seq
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.gpu.accumulate_in_place import buffers_of
from schedlang.loopir.gpu.epilogue_in_place import epilogue_in_place

from .nests import loop_var

ACC = "wgmma.accumulator"
SLOT = loop_var("slot")
OTHER = loop_var("other")


def _buffer(name, shape, dtype="float32", scope=ACC) -> Buffer:
    return Buffer(name, tuple(const(n) for n in shape), dtype, scope)


def _tile(buffer) -> Tile:
    return Tile(buffer, (const(0), const(0)), (0, 1), (64, 64))


ACCUMULATOR = _buffer("acc", (64, 64))
SCALE = _buffer("SA", (1,), scope="global")
A = _buffer("A", (64, 64), "float16", "shared")
C = _buffer("C", (64, 64), "bfloat16", "global")


def _run(held_dtype="bfloat16", read_at=SLOT, fill=True, shape=(64, 64), cast=True):
    """``(statements, H)``: fill acc; acc += A @ A; for each slot H = bfloat16(acc * SA);
    C = store_matrix(H)."""
    held = _buffer("H", shape, held_dtype)
    product = MatrixOp("mma", _tile(ACCUMULATOR), (_tile(A), _tile(A)))
    scaled = Binary(
        "*", Load(ACCUMULATOR, (read_at,), "float32"), Load(SCALE, (const(0),), "float32"),
        "float32",
    )  # fmt: skip
    value = Cast(scaled, held_dtype) if cast and held_dtype != "float32" else scaled
    epilogue = For(SLOT, const(0), const(32), "unrolled", Store(held, (SLOT,), value))
    store = MatrixOp("store", _tile(C), (_tile(held),))
    first = [MatrixOp("fill", _tile(ACCUMULATOR), value=const(0.0, "float32"))] if fill else []
    return seq(*first, product, epilogue, store), held


def _stored_from(stmt) -> list[str]:
    return [s.srcs[0].buffer.name for s in walk_stmt(stmt) if isinstance(s, MatrixOp)
            and s.op == "store"]  # fmt: skip


def test_the_scaled_values_are_computed_in_the_accumulator_and_converted_by_the_store():
    body, held = _run()
    out = epilogue_in_place(body)
    assert _stored_from(out) == ["acc"]
    stores = [s for s in walk_stmt(out) if isinstance(s, Store)]
    assert len(stores) == 1 and stores[0].buffer is ACCUMULATOR
    assert str(stores[0].value) == "acc.slot[slot] * SA[0]"  # the conversion is the store's
    assert not any(b is held for s in walk_stmt(out) for b in buffers_of(s))  # H is gone


def test_a_float32_copy_is_computed_in_place_too():
    body, _ = _run(held_dtype="float32")
    assert _stored_from(epilogue_in_place(body)) == ["acc"]


def test_runs_that_need_their_own_copy_are_left_alone():
    for body, _ in (
        _run(read_at=OTHER),  # reads another slot: acc's element may be overwritten first
        _run(fill=False),  # acc not filled first: it may carry an enclosing loop's sums
        _run(shape=(32, 128)),  # another shape: the slots hold other elements
        _run(cast=False, held_dtype="bfloat16"),  # the value is not float32 converted once
    ):
        assert epilogue_in_place(body) is body
    body, held = _run()
    after = Store(_buffer("Out", (64,), scope="global"), (SLOT,), Load(ACCUMULATOR, (SLOT,),
                                                                        "float32"))  # fmt: skip
    kept = seq(body, For(SLOT, const(0), const(32), "unrolled", after))  # acc read afterwards
    assert _stored_from(epilogue_in_place(kept)) == ["H"]
    reread = Store(_buffer("Out", (64,), scope="global"), (SLOT,), Load(held, (SLOT,), "float32"))
    kept = seq(body, For(SLOT, const(0), const(32), "unrolled", reread))  # H read elsewhere
    assert _stored_from(epilogue_in_place(kept)) == ["H"]
