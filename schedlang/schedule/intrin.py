"""The tensor-core intrinsics schedlang ships for ``tensorize`` (TE's ``decl_tensor_intrin``
for CUDA, declared once here so that users never write PTX).

An intrinsic says what one warp-wide instruction (or a short fixed sequence of them) computes
on a tile; ``s[X].tensorize(axis, intrin)`` asks that the loops of stage X from `axis` inwards
be replaced by it. Lowering proves with isl that those loops compute exactly that (their
extents, their access pattern, their dtypes) before anything is generated:

- ``load_matrix(scope)``: a copy of a 16 x 16 tile (16 x n for ``wmma.matrix_b``) into a
  fragment stage of that scope (``s.cache_read(X, "wmma.matrix_a", [C])``), from shared or
  global memory (``ldmatrix`` where the rows are 16-byte aligned in shared memory);
- ``mma_sync(n)``: ``C[i, j] += A[i, k] * B[k, j]`` over 16 x n x 16 (two or one
  ``mma.sync.m16n8k16``), float16 or bfloat16 operands into a float32 (or float16)
  accumulator fragment (``s.cache_write(C, "wmma.accumulator")``); the reduction's init
  becomes a fill of the accumulator;
- ``store_matrix(n)``: a copy of a 16 x n accumulator tile out of its fragment (to shared or
  global memory), converted to the destination's dtype.

``m=32`` gives each of them TE's taller warp-matrix tile (m32n8k16): A 32 x 16, B 16 x 8, the
accumulator 32 x 8 (``load_matrix("wmma.matrix_a", m=32)``, ``load_matrix("wmma.accumulator",
n=8, m=32)``, ``mma_sync(n=8, m=32)``, ``store_matrix(n=8, m=32)``; B's load is the usual
``load_matrix("wmma.matrix_b", n=8)``), of 16-bit data; a product is two ``mma.sync.m16n8k16``,
one per 16 rows. ``m=8`` with ``n=32`` gives TE's wider one (m8n32k16): A 8 x 16, B 16 x 32
(``load_matrix("wmma.matrix_b", n=32)``), the accumulator 8 x 32; a product is four
``m16n8k16`` whose A has 8 rows of zeros below, whose results there are dropped.

float32 data runs on the tensor cores only when asked (``tf32=True``): its products are then
of TF32 values (float32 rounded to a 10-bit mantissa), summed in float32, a tile's reduction 8
long (``mma.sync.m16n8k8``); never a silent change of precision.

The 32 lanes of a warp run each instruction together: the stages that use them bind
``threadIdx.y``/``threadIdx.z`` (one warp per value) but not ``threadIdx.x``, which is the lane
(the block's x extent must be 32, as other stages' loops make it).

On Hopper (sm_90a), a *warpgroup* of 4 warps (128 threads) multiplies larger tiles straight out
of shared memory:

- ``wgmma(n)``: ``C[i, j] += A[i, k] * B[k, j]`` over 64 x n x 16 (``wgmma.mma_async``,
  n a multiple of 8 up to 256), A and B read from shared stages swizzled by 128 bytes
  (``s[A_shared].swizzle(128)``), either of their dimensions contiguous; the accumulator is a
  ``wgmma.accumulator`` fragment, 64 x n a tile, held by the warpgroup's 128 threads;
- ``wgmma(n, k=32)``: the same of 8-bit floats (``float8_e4m3fn``, ``float8_e5m2``, either
  for each operand), 64 x n x 32 a tile: 32 bytes of K a row, as 16 halves are. The
  instruction reads 8-bit operands K-major only, so both A and B are stored with K as their
  last dimension (B as ``[N, K]``, ``C[i, j] += A[i, k] * B[j, k]``);
- ``store_matrix(n, m=64)``: the store of such a tile; with ``tma=True`` (to a tensor in
  global memory) it goes through shared memory in pieces of 128-byte rows, each stored by the
  copy engine in the background, so the warpgroup's next products start at once and a tile
  cut by the edge of the tensor is clipped by the copy engine itself.

The warpgroup's 4 warps are ``threadIdx.y`` (extent 4, left unbound by these stages, as
``threadIdx.x`` is); warpgroups, if several, are ``threadIdx.z``.
"""

from __future__ import annotations

from dataclasses import dataclass

FRAGMENT_SCOPES = ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator", "wgmma.accumulator")
M = 16
M_STACKED = 32  # rows of TE's m32n8k16 tiles: two 16-row tiles, one over the other
M_SHORT = 8  # rows of TE's m8n32k16 tiles: the top half of 16-row ones
M_WARPGROUP = 64  # rows of a warpgroup's accumulator tile (wgmma.mma_async.m64nNk16)
K = 16
K_FLOAT8 = 32  # wgmma's reduction of 8-bit floats: the same 32 bytes of a row as 16 halves
K_TF32 = 8


@dataclass(frozen=True, slots=True)
class TensorIntrin:
    """One tensor-core operation on a tile: `kind` is ``"load"``, ``"mma"`` or ``"store"``,
    `scope` the fragment scope a load fills, `shape` the loops it replaces (rows, columns[,
    reduction]) in the order the stage's nest must have them."""

    name: str
    kind: str
    shape: tuple[int, ...]
    scope: str | None = None
    tf32: bool = False  # float32 data rounded to TF32 (m16n8k8)
    tma: bool = False  # a store by the copy engine, through shared memory

    @property
    def warpgroup(self) -> bool:
        """Whether a warpgroup (128 threads) runs it: wgmma and the store of its tiles."""
        return self.shape[0] == M_WARPGROUP

    def __repr__(self) -> str:
        return self.name


def load_matrix(scope: str, n: int = 16, tf32: bool = False, m: int = M) -> TensorIntrin:
    """A load of a tile into a fragment of `scope`: `m` x 16 for ``wmma.matrix_a`` (m x k),
    16 x `n` for ``wmma.matrix_b`` (k x n) and `m` x `n` for ``wmma.accumulator`` (m x n);
    with `tf32`, the operands' reduction is 8 long (16 x 8 and 8 x `n`) and their data
    float32. `m` is 16, or TE's 32 (m32n8k16) or 8 (m8n32k16) (module doc)."""
    if scope not in FRAGMENT_SCOPES:
        raise ValueError(f"load_matrix: unknown scope {scope!r}; use one of {FRAGMENT_SCOPES}")
    k = K_TF32 if tf32 else K
    n = _n(n, "load_matrix")
    if scope == "wmma.matrix_b":
        if m != M:
            raise ValueError(
                "load_matrix: m is the rows of A and of the accumulator; B of TE's m32n8k16 "
                'and m8n32k16 products is load_matrix("wmma.matrix_b", n=8) and n=32'
            )
        _m(M_SHORT if n == 32 else M, n, tf32, "load_matrix")
        rows = M
    else:
        rows = _m(m, n if scope == "wmma.accumulator" else None, tf32, "load_matrix")
    shape = {"wmma.matrix_a": (rows, k), "wmma.matrix_b": (k, n)}.get(scope, (rows, n))
    extra = ("" if n == 16 or scope == "wmma.matrix_a" else f", n={n}") + (
        ", tf32=True" if tf32 else ""
    )
    extra += "" if rows == M else f", m={rows}"
    return TensorIntrin(f'sl.intrin.load_matrix("{scope}"{extra})', "load", shape, scope, tf32)


def mma_sync(n: int = 16, tf32: bool = False, m: int = M) -> TensorIntrin:
    """``C[i, j] += A[i, k] * B[k, j]`` over a 16 x `n` x 16 tile (``mma.sync.m16n8k16``), or
    with `tf32` of float32 data rounded to TF32 over a 16 x `n` x 8 tile (``m16n8k8``); with
    ``m=32`` over TE's 32 x 8 x 16 tile (two m16n8k16, one per 16 rows), with ``m=8, n=32``
    over TE's 8 x 32 x 16 one (four m16n8k16 of A's 8 rows and 8 rows of zeros)."""
    n = _n(n, "mma_sync")
    rows = _m(m, n, tf32, "mma_sync")
    if tf32:
        return TensorIntrin(
            f"sl.intrin.mma_sync(n={n}, tf32=True)", "mma", (M, n, K_TF32), None, True
        )
    extra = "" if rows == M else f", m={rows}"
    return TensorIntrin(f"sl.intrin.mma_sync(n={n}{extra})", "mma", (rows, n, K))


def wgmma(n: int = 128, k: int = K) -> TensorIntrin:
    """``C[i, j] += A[i, k] * B[k, j]`` over a 64 x `n` x `k` tile by a warpgroup
    (``wgmma.mma_async.m64nNk16``, sm_90a), A and B in swizzled shared memory, summed in a
    float32 ``wgmma.accumulator`` fragment: k = 16 for float16 or bfloat16 data, k = 32 for
    8-bit floats (``m64nNk32``, both operands K-major)."""
    n = _wide_n(n, "wgmma")
    if k not in (K, K_FLOAT8) or isinstance(k, bool):
        raise ValueError(
            f"wgmma: k must be {K} (float16 or bfloat16 data) or {K_FLOAT8} (8-bit floats), "
            f"got {k!r}"
        )
    name = f"sl.intrin.wgmma(n={n})" if k == K else f"sl.intrin.wgmma(n={n}, k={k})"
    return TensorIntrin(name, "mma", (M_WARPGROUP, n, int(k)))


def store_matrix(n: int = 16, m: int = 16, tma: bool = False) -> TensorIntrin:
    """A store of an `m` x `n` accumulator tile out of its fragment: m = 16 for a warp's
    ``wmma.accumulator``, m = 64 for a warpgroup's ``wgmma.accumulator``. With `tma` (m = 64,
    sm_90), the copy engine stores it from shared memory (module doc)."""
    if not isinstance(tma, bool):
        raise ValueError(f"store_matrix: tma must be True or False, got {tma!r}")
    if m == M_WARPGROUP and not isinstance(m, bool):
        n = _wide_n(n, "store_matrix")
        extra = ", tma=True" if tma else ""
        name = f"sl.intrin.store_matrix(n={n}, m=64{extra})"
        return TensorIntrin(name, "store", (M_WARPGROUP, n), tma=tma)
    if m not in (M_SHORT, M, M_STACKED) or isinstance(m, bool):
        raise ValueError(
            f"store_matrix: m must be 16, 32 or 8 (a warp's tile) or 64 (a warpgroup's), got {m!r}"
        )
    if tma:
        raise ValueError("store_matrix: tma=True stores a warpgroup's tile (m=64) on sm_90")
    rows = _m(m, n, False, "store_matrix")
    n = _n(n, "store_matrix")
    extra = "" if rows == M else f", m={rows}"
    return TensorIntrin(f"sl.intrin.store_matrix(n={n}{extra})", "store", (rows, n))


def _wide_n(n: object, call: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not (8 <= n <= 256 and n % 8 == 0):
        raise ValueError(f"{call}: n must be a multiple of 8 from 8 to 256, got {n!r}")
    return n


# the columns a warp's tile of so many rows may have (TE's m16n16k16, m32n8k16, m8n32k16)
_COLUMNS = {M: (8, 16), M_STACKED: (8,), M_SHORT: (32,)}


def _m(m: object, n: int | None, tf32: bool, call: str) -> int:
    """The rows of a warp's A or accumulator tile, checked against its columns `n` where it
    has them: 16, or TE's 32 (n = 8) or 8 (n = 32), those two of 16-bit operands."""
    if isinstance(m, bool) or m not in _COLUMNS:
        raise ValueError(
            f"{call}: m must be 16, or 32 or 8 (TE's m32n8k16 and m8n32k16 tiles), got {m!r}"
        )
    if m != M and tf32:
        raise ValueError(f"{call}: m={m} is a tile of 16-bit operands; tf32 tiles have m=16")
    if n is not None and n not in _COLUMNS[m]:
        if m == M:
            raise ValueError(
                f"{call}: n must be 8 or 16 for 16 rows (one or two m16n8k16 tiles), or 32 "
                f"with m=8 (m8n32k16), got {n!r}"
            )
        shape = "m32n8k16" if m == M_STACKED else "m8n32k16"
        raise ValueError(f"{call}: m={m} is the {shape} tile: n={_COLUMNS[m][0]}, not n={n}")
    return int(m)


def _n(n: object, call: str) -> int:
    if n not in (8, 16, 32) or isinstance(n, bool):
        raise ValueError(
            f"{call}: n must be 8 or 16 (one or two m16n8k16 tiles), or 32 with m=8 "
            f"(m8n32k16), got {n!r}"
        )
    return int(n)
