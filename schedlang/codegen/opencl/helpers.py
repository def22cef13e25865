"""The helper functions a program calls where C's operators mean something else than the loop
IR's, which means what numpy computes (the reference evaluator's rules, as `codegen.llvm.arith`
implements them for LLVM):

- integer ``//`` and ``%`` floor (C truncates), ``x // 0`` and ``x % 0`` are 0, and
  ``x // -1`` wraps (C leaves both undefined); float ``//`` and ``%`` are numpy's
  ``floor_divide`` and ``remainder``;
- shifts by the width or more give 0 (or the sign), where C leaves them undefined;
- float ``min``/``max`` return NaN when either side is NaN (``fmin``/``fmax`` drop it);
- 16-bit floats are rounded after each operation (`types`), by ``vstore_half_rte`` or by
  bfloat16's bits, which also read and write bfloat16 buffers;
- ``sigmoid`` is the reference's formula, kept from overflowing.

Each definition is written once per program, before the kernels, in the order first used.
"""

from __future__ import annotations

from .types import compute_type

_SIGNED_WIDE = {"int": "uint", "long": "ulong"}  # negation that wraps, through unsigned
_BITS = {"char": 8, "short": 16, "int": 32, "long": 64, "uchar": 8, "uint": 32}


def _negate(t: str) -> str:
    wide = _SIGNED_WIDE.get(t)
    return f"({t})(({wide})0 - ({wide})x)" if wide else f"({t})(-x)"


def _floordiv(t: str, signed: bool) -> str:
    if not signed:
        return f"  return y == 0 ? 0 : ({t})(x / y);"
    return "\n".join(
        [
            "  if (y == 0) return 0;",
            f"  if (y == -1) return {_negate(t)};",
            f"  {t} r = ({t})(x % y);",
            f"  return ({t})(x / y - (r != 0 && (r ^ y) < 0));",
        ]
    )


def _floormod(t: str, signed: bool) -> str:
    if not signed:
        return f"  return y == 0 ? 0 : ({t})(x % y);"
    return "\n".join(
        [
            "  if (y == 0 || y == -1) return 0;",
            f"  {t} r = ({t})(x % y);",
            f"  return (r != 0 && (r ^ y) < 0) ? ({t})(r + y) : r;",
        ]
    )


def _float_floordiv(t: str) -> str:
    return "\n".join(
        [
            "  if (y == 0) return x / y;",
            f"  {t} mod = fmod(x, y);",
            f"  {t} div = (x - mod) / y;",
            "  if (mod != 0 && (y < 0) != (mod < 0)) div -= 1;",
            f"  if (div == 0) return copysign(({t})0, x / y);",
            f"  {t} whole = floor(div);",
            "  return div - whole > 0.5 ? whole + 1 : whole;",
        ]
    )


def _float_floormod(t: str) -> str:
    return "\n".join(
        [
            f"  {t} mod = fmod(x, y);",
            "  if (y == 0) return mod;",
            f"  if (mod == 0) return copysign(({t})0, y);",
            "  return (y < 0) != (mod < 0) ? mod + y : mod;",
        ]
    )


def _shift(t: str, op: str, signed: bool) -> str:
    bits = _BITS[t]
    past = "(x < 0 ? -1 : 0)" if op == ">>" and signed else "0"
    return f"  return (ulong)y >= {bits} ? ({t}){past} : ({t})(x {op} y);"


_HALF = """\
  ushort bits;
  vstore_half_rte(x, 0, (__private half*)&bits);
  return vload_half(0, (__private const half*)&bits);"""
_BF16_BITS = """\
  uint u = as_uint(x);
  if (isnan(x)) return (ushort)((u >> 16) | 0x40);
  return (ushort)((u + 0x7fff + ((u >> 16) & 1)) >> 16);"""


class Helpers:
    """The helpers a program calls, each defined once, dependencies first."""

    def __init__(self) -> None:
        self._defined: dict[str, str] = {}

    def _define(self, name: str, signature: str, body: str) -> str:
        if name not in self._defined:
            self._defined[name] = f"inline {signature.format(name=name)} {{\n{body}\n}}"
        return name

    def text(self) -> str:
        return "\n\n".join(self._defined.values())

    def divide(self, op: str, dtype: str, signed: bool, is_float: bool) -> str:
        """The function of ``x // y`` (`op` "//") or ``x % y`` ("%") in `dtype`."""
        t = compute_type(dtype)
        word = "floordiv" if op == "//" else "floormod"
        if is_float:
            body = _float_floordiv(t) if op == "//" else _float_floormod(t)
        else:
            body = _floordiv(t, signed) if op == "//" else _floormod(t, signed)
        return self._define(f"sl_{word}_{t}", f"{t} {{name}}({t} x, {t} y)", body)

    def shift(self, op: str, dtype: str, signed: bool) -> str:
        t = compute_type(dtype)
        word = "shl" if op == "<<" else "shr"
        body = _shift(t, op, signed)
        return self._define(f"sl_{word}_{t}", f"{t} {{name}}({t} x, {t} y)", body)

    def min_max(self, op: str, dtype: str) -> str:
        """NaN-propagating float ``min``/``max``."""
        t = compute_type(dtype)
        body = f"  return isnan(x) || isnan(y) ? x + y : f{op}(x, y);"
        return self._define(f"sl_{op}_{t}", f"{t} {{name}}({t} x, {t} y)", body)

    def round_half(self, source: str = "float32") -> str:
        """A float (or a double) rounded to the nearest float16, as a float."""
        t = compute_type(source)
        return self._define(f"sl_round_half_{t}", f"float {{name}}({t} x)", _HALF)

    def bf16_bits(self) -> str:
        return self._define("sl_bf16_bits", "ushort {name}(float x)", _BF16_BITS)

    def bf16_value(self) -> str:
        body = "  return as_float((uint)b << 16);"
        return self._define("sl_bf16_value", "float {name}(ushort b)", body)

    def round_bf16(self) -> str:
        body = f"  return {self.bf16_value()}({self.bf16_bits()}(x));"
        return self._define("sl_round_bf16", "float {name}(float x)", body)

    def sigmoid(self, dtype: str) -> str:
        t = compute_type(dtype)
        body = "\n".join(
            [f"  {t} e = exp(-fabs(x));", f"  return (x >= 0 ? ({t})1 : e) / (({t})1 + e);"]
        )
        return self._define(f"sl_sigmoid_{t}", f"{t} {{name}}({t} x)", body)
