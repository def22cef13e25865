"""``tvm.target.Target``: TE's target strings (``"llvm"``, ``"cuda"``, ``"opencl"``, with
options) read as schedlang's (``"cpu"``, ``"cuda -arch=sm_80"``, ``"opencl"``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ...errors import LoweringError, entry_point
from ..cpu_options import check_cpu_options

CPU_KINDS = ("llvm",)  # TE target names compiled for the CPU
CUDA_KINDS = ("cuda", "nvptx")
OPENCL_KINDS = ("opencl",)

# What TE's target kinds say of themselves when the string does not: their dispatch keys
# (TOPI picks a schedule by the first key it has one for) and the GPU kinds' defaults.
DEFAULT_KEYS = {"llvm": ("cpu",), "cuda": ("cuda", "gpu"), "opencl": ("opencl", "gpu")}
DEFAULT_ATTRS = {
    "llvm": {},
    "cuda": {"max_num_threads": 1024, "thread_warp_size": 32},
    "opencl": {"max_num_threads": 256, "thread_warp_size": 1},
}
LISTS = ("mattr", "libs", "keys")  # options TE reads as lists of comma-separated names


_entered: list[Target] = []  # the targets of the enclosing `with` blocks, innermost last


@dataclass(frozen=True)
class TargetKind:
    name: str


class Target:
    """A TE target. ``llvm`` compiles for the host's own CPU, and its options (``-mcpu=``,
    ``-mattr=``, ``-mtriple=``) are accepted where this CPU satisfies them and refused by name
    where it cannot (`cpu_options`); ``cuda`` keeps ``-arch=sm_XY``; ``opencl`` builds OpenCL
    C source. ``c`` (C source) is refused: schedlang compiles through LLVM."""

    @entry_point
    def __init__(self, target: object, host: object = None) -> None:
        if isinstance(target, Target):
            target, host = target.text, host if host is not None else target.host
        if not isinstance(target, str) or not target.split():
            raise LoweringError(f"a target is a string such as 'llvm' or 'cuda', not {target!r}")
        self.text = target
        words = target.split()
        kind = words[0]
        if kind == "c":
            raise LoweringError(
                f"target {target!r} asks for C source, which schedlang does not write (it "
                "compiles through LLVM): use 'llvm'"
            )
        if kind not in CPU_KINDS + CUDA_KINDS + OPENCL_KINDS:
            raise LoweringError(
                f"target {target!r}: schedlang compiles for 'llvm' (the CPU), 'cuda' and "
                "'opencl' only"
            )
        if kind in CPU_KINDS:
            check_cpu_options(target, words[1:])
        self.kind = TargetKind(_kind_name(kind))
        self.host = None if host is None else Target(host)
        arch = [w for w in words[1:] if w.startswith("-arch=")]
        self.schedlang = {"llvm": "cpu", "opencl": "opencl"}.get(
            self.kind.name, " ".join(["cuda", *arch])
        )
        self.arch = arch[-1][len("-arch=") :] if arch else None  # "sm_90", as TE's
        self.attrs = {**DEFAULT_ATTRS[self.kind.name], **_options(words[1:])}
        given = tuple(self.attrs.pop("keys", ()))
        self.keys = given + tuple(k for k in DEFAULT_KEYS[self.kind.name] if k not in given)

    # TE's attributes, read from `attrs` (the options given, over the kind's defaults)

    @property
    def max_num_threads(self) -> int:
        return int(self._attr("max_num_threads"))

    @property
    def thread_warp_size(self) -> int:
        return int(self._attr("thread_warp_size"))

    @property
    def max_shared_memory_per_block(self) -> int:
        return int(self._attr("max_shared_memory_per_block"))

    @property
    def model(self) -> str:
        return str(self.attrs.get("model", "unknown"))

    @property
    def mcpu(self) -> str:
        return str(self.attrs.get("mcpu", ""))

    @property
    def mattr(self) -> list[str]:
        return list(self.attrs.get("mattr", []))

    @property
    def libs(self) -> list[str]:
        return list(self.attrs.get("libs", []))

    @property
    def device_name(self) -> str:
        return str(self.attrs.get("device", ""))

    def _attr(self, name: str) -> object:
        if name in self.attrs:
            return self.attrs[name]
        if self.kind.name == "llvm":
            raise LoweringError(
                f"target {self.text!r} has no {name}: it is a GPU's limit, which TE's 'llvm' "
                "target kind does not define either"
            )
        raise LoweringError(
            f"target {self.text!r} has no {name} (TE's '{self.kind.name}' kind has no default "
            f"for it); give it as an option, e.g. '{self.text} -{name}=...'"
        )

    def __enter__(self) -> Target:
        _entered.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _entered.remove(self)

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The target of the innermost ``with Target(...)``: what ``tvm.build`` compiles for
        when it is given none."""
        if _entered:
            return _entered[-1]
        if allow_none:
            return None
        raise LoweringError("no target is set: use `with tvm.target.Target(...)` or pass one")

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Target({self.text!r})"


def _kind_name(kind: str) -> str:
    if kind in CPU_KINDS:
        return "llvm"
    return "opencl" if kind in OPENCL_KINDS else "cuda"


def _options(words: list[str]) -> dict[str, object]:
    """``-name=value`` options as TE's attributes: lists where TE reads lists, integers where
    the value is one, a bare ``-name`` as true."""
    attrs: dict[str, object] = {}
    for word in words:
        name, eq, value = word.lstrip("-").partition("=")
        if not eq:
            attrs[name] = True
        elif name in LISTS:
            attrs[name] = [v for v in value.split(",") if v]
        else:
            attrs[name] = int(value) if value.lstrip("-").isdigit() else value
    return attrs


def as_target(target: object) -> Target:
    """`target` as a `Target` (a string, a Target, or None: the current one, else the CPU)."""
    if target is None:
        return Target.current() or Target("llvm")
    return target if isinstance(target, Target) else Target(target)


def generic_func(fdefault):
    """TE's function dispatched by target: ``f.register("cpu")(g)`` makes `g` what `f` calls
    inside ``with Target(...)`` for a target with that key; elsewhere `fdefault` runs."""
    registry: dict[str, object] = {}

    @functools.wraps(fdefault)
    def dispatch(*args, **kwargs):
        target = Target.current()
        for key in target.keys if target is not None else ():
            if key in registry:
                return registry[key](*args, **kwargs)
        return fdefault(*args, **kwargs)

    def register(key, func=None, override=False):
        keys = [key] if isinstance(key, str) else list(key)

        def add(function):
            for name in keys:
                if name in registry and not override:
                    raise ValueError(f"generic_func '{fdefault.__name__}': key '{name}' is taken")
                registry[name] = function
            return function

        return add(func) if func is not None else add

    dispatch.register = register
    dispatch.fdefault = fdefault
    return dispatch
