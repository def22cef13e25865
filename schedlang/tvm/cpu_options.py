"""Which options of a TE ``llvm`` target the machine schedlang runs on can honour.

schedlang compiles CPU kernels for the CPU it runs on, with every instruction set that CPU has
(`codegen.cpu.jit`). TE's options name a CPU to compile for: an option this CPU satisfies is
accepted (the code runs here, and is at least as fast as the option asks), one it cannot
(another architecture, instructions it lacks) is refused by name, never built for the host
behind the user's back.

``-mcpu`` names are x86-64's, checked against the instruction sets each needs: the levels of
the x86-64 psABI (``x86-64-v2`` to ``-v4``) and the named CPUs TE's tutorials use, each at the
level it implements. Another name is refused, since whether this CPU runs its code is unknown.
"""

from __future__ import annotations

from ..codegen.cpu.jit import host
from ..errors import LoweringError

_V2 = ("sse2", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16")
_SANDY = (*_V2, "avx")
_V3 = (*_SANDY, "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe")
_V4 = (*_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_VNNI = (*_V4, "avx512vnni")
_ICELAKE = (*_VNNI, "avx512vbmi", "avx512vbmi2")
_NEEDS = {
    "x86-64": ("sse2",),
    **dict.fromkeys(("x86-64-v2", "nehalem", "corei7", "westmere"), _V2),
    **dict.fromkeys(("sandybridge", "corei7-avx", "ivybridge", "core-avx-i"), _SANDY),
    **dict.fromkeys(("x86-64-v3", "haswell", "core-avx2", "broadwell", "skylake"), _V3),
    **dict.fromkeys(("alderlake", "znver1", "znver2", "znver3"), _V3),
    **dict.fromkeys(("x86-64-v4", "skylake-avx512", "skx", "cooperlake"), _V4),
    "cascadelake": _VNNI,
    **dict.fromkeys(("icelake-client", "icelake-server", "tigerlake", "sapphirerapids"), _ICELAKE),
    "znver4": _ICELAKE,
}
_ARCH_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "arm64": "aarch64"}
_NAMES_ONLY = ("-keys", "-model", "-num-cores")  # say nothing about the code


def host_features() -> dict[str, bool]:
    """Whether this CPU has each feature LLVM knows (``"avx2"``): schedlang compiles with all
    it has, whatever the target's options name."""
    machine = host().target
    return {flag[1:]: flag[0] == "+" for flag in machine.features.split(",") if flag[:1] in "+-"}


def check_cpu_options(text: str, options: list[str]) -> None:
    """Refuse the options of the ``llvm`` target `text` this machine cannot honour."""
    machine = host().target
    features = host_features()
    for option in options:
        key, _, value = option.partition("=")
        if key == "-mtriple":
            _check_triple(text, value, machine.triple)
        elif key == "-mcpu":
            _check_cpu(text, value, machine.cpu, features)
        elif key == "-mattr":
            _check_attributes(text, value, machine.cpu, features)
        elif key not in _NAMES_ONLY:
            raise LoweringError(
                f"target {text!r}: schedlang does not honour the option {option!r}; for 'llvm' "
                "it takes -mcpu, -mattr and -mtriple that this machine satisfies, and -keys, "
                "-model, -num-cores (names that change no code)"
            )


def _arch(triple: str) -> str:
    first = triple.split("-")[0]
    return _ARCH_ALIASES.get(first, first)


def _check_triple(text: str, triple: str, host_triple: str) -> None:
    arch, here = _arch(triple), _arch(host_triple)
    systems = ("linux", "darwin", "macos", "windows")
    asked = [s for s in systems if s in triple]
    if arch != here or any(s not in host_triple for s in asked):
        raise LoweringError(
            f"target {text!r}: -mtriple={triple} is code for another machine, but schedlang "
            f"compiles for the one it runs on ({host_triple}); drop -mtriple, or build on "
            f"the {arch} machine the code is for"
        )


def _check_cpu(text: str, cpu: str, host_cpu: str, features: dict[str, bool]) -> None:
    if cpu in ("native", host_cpu):
        return
    needs = _NEEDS.get(cpu)
    if needs is None:
        raise LoweringError(
            f"target {text!r}: schedlang does not know which instructions -mcpu={cpu} needs, "
            f"so cannot tell whether this CPU ({host_cpu}) runs its code; use -mcpu=native "
            "(schedlang compiles for this CPU in any case)"
        )
    missing = [f for f in needs if not features.get(f, False)]
    if missing:
        raise LoweringError(
            f"target {text!r}: -mcpu={cpu} needs {', '.join(missing)}, which this CPU "
            f"({host_cpu}) does not have; use -mcpu=native, or build on a CPU that has them"
        )


def _check_attributes(text: str, value: str, host_cpu: str, features: dict[str, bool]) -> None:
    for flag in filter(None, value.split(",")):
        name = flag.lstrip("+-")
        if name not in features:
            raise LoweringError(
                f"target {text!r}: -mattr names {name!r}, a feature LLVM does "
                "not know on this machine; check its spelling (e.g. +avx2)"
            )
        if flag.startswith("-"):
            raise LoweringError(
                f"target {text!r}: -mattr={value} leaves out {name}, but schedlang compiles "
                f"with every instruction set of this CPU ({host_cpu}); drop {flag}"
            )
        if not features[name]:
            raise LoweringError(
                f"target {text!r}: -mattr={value} needs {name}, which this CPU ({host_cpu}) "
                "does not have; drop it, or build on a CPU that has it"
            )
