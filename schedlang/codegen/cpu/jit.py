"""LLVM for the host: one target machine per process, and its JITs, through llvmlite.binding.

Generated IR is parsed, verified, optimised with LLVM's default ``-O3`` pipeline (the new pass
manager, tuned for the host CPU and its features, no fast-math; LLVM's own loop unroller is off
because unrolling is the schedule's decision, and it costs a third of the compile time), compiled
to an object file (which the compile cache may keep on disk), and linked into the process by
`linker`: schedlang's own object loader, or LLJIT (`link_symbols`) for a file it does not
handle. Anything that fails in here is schedlang's bug, never the user's: it is an
`InternalError` with the IR attached.

Code LLJIT links lives as long as the object `link_symbols` returns. Each link makes a library
in its JIT, and a JIT keeps its libraries' bookkeeping (about 9 KB each) after their code is
unloaded, so a JIT takes `LINKS_PER_JIT` libraries and then gives way to a fresh one; the old
one is freed with the last code linked into it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import llvmlite.binding as llvm

from ...errors import InternalError, LoweringError
from ..llvm.passes import run_passes

if TYPE_CHECKING:
    from .target import CpuTarget

LINKS_PER_JIT = 64

_lock = threading.Lock()
_names = itertools.count()
_jit: llvm.LLJIT | None = None
_jit_links = 0


@dataclass(frozen=True)
class Host:
    triple: str
    cpu: str
    features: str
    machine: llvm.TargetMachine

    @property
    def key(self) -> str:
        """What code compiled for this host depends on (`CpuTarget.key`)."""
        return f"cpu {self.triple} {self.cpu} {self.features}"

    @functools.cached_property
    def target(self) -> CpuTarget:
        """The code generator's target; imported here, since a kernel revived from disk only
        links and needs none of it."""
        from .target import CpuTarget

        return CpuTarget(self.triple, self.cpu, self.features)


@functools.cache
def host() -> Host:
    """The host's target and target machine, made on first use (LLVM initialisation is slow)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _load_libm()
    triple = llvm.get_process_triple()
    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features().flatten()
    machine = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, codemodel="jitdefault", jit=True
    )
    return Host(triple, cpu, features, machine)


def _load_libm() -> None:
    """Make the C math library's functions visible to linked code: by its usual name on
    Linux, else where `ctypes.util.find_library` finds it (which runs a subprocess, a few
    milliseconds of every process that builds or loads a kernel)."""
    try:
        llvm.load_library_permanently("libm.so.6")
        return
    except RuntimeError:
        pass
    libm = ctypes.util.find_library("m")
    if libm is not None:
        llvm.load_library_permanently(libm)


def failed(what: str, error: Exception, text: str) -> InternalError:
    err = InternalError(f"LLVM failed to {what}: {error}")
    note = f"the generated LLVM IR:\n{text}"
    if hasattr(err, "add_note"):  # Python 3.11+
        err.add_note(note)
    else:
        err.args = (f"{err.args[0]}\n{note}",)
    return err


def optimized(text: str) -> llvm.ModuleRef:
    """`text` parsed, verified and optimised at -O3 for the host."""
    machine = host().machine
    try:
        module = llvm.parse_assembly(text)
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        module.verify()
    except RuntimeError as error:
        raise failed("accept the generated IR", error, text) from None
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = False  # the schedule decides (unroll), done in the loop IR
    builder = llvm.create_pass_builder(machine, options)
    run_passes(builder.getModulePassManager(), module, builder)
    return module


def linked_text(text: str, imports: tuple[str, ...]) -> str:
    """The module `text` with the modules `imports` (LLVM IR text) linked into it; a function
    that several define is the first one's (as TE links only what is still needed)."""
    with _lock:
        host()
        module = llvm.parse_assembly(text)
        for code in imports:
            try:
                other = llvm.parse_assembly(code)
                other.verify()
            except RuntimeError as error:
                raise LoweringError(
                    f"the LLVM IR given with pragma 'import_llvm' does not parse: "
                    f"{str(error).strip()}"
                ) from None
            other.triple, other.data_layout = module.triple, module.data_layout
            for function in other.functions:  # defined by an earlier import: that one holds
                if not function.is_declaration and _defined(module, function.name):
                    function.linkage = "linkonce_odr"
            try:
                module.link_in(other)
            except RuntimeError as error:
                raise LoweringError(
                    f"the LLVM IR given with pragma 'import_llvm' does not link into the "
                    f"kernel: {str(error).strip()}"
                ) from None
        return str(module)


def check_defined(text: str, names: set[str]) -> None:
    """Each of the C functions `names` is defined in the module `text` or loaded in the
    process, else a LoweringError naming it (before the linker's own message)."""
    if not names:
        return
    with _lock:
        host()
        module = llvm.parse_assembly(text)
        for name in sorted(names):
            if not _defined(module, name) and not llvm.address_of_symbol(name):
                raise LoweringError(
                    f"the C function '{name}' of a declared intrinsic is defined nowhere: give "
                    'its LLVM IR with pragma(axis, "import_llvm", ir), or load a library that '
                    "has it"
                )


def _defined(module: llvm.ModuleRef, name: str) -> bool:
    try:
        return not module.get_function(name).is_declaration
    except NameError:
        return False


def symbol_address(name: str) -> int:
    """The address of the C symbol `name` in this process, 0 where there is none."""
    with _lock:
        host()
        return llvm.address_of_symbol(name) or 0


def object_code(text: str) -> bytes:
    with _lock:
        return host().machine.emit_object(optimized(text))


def assembly(text: str) -> str:
    with _lock:
        return host().machine.emit_assembly(optimized(text))


def optimized_ir(text: str) -> str:
    with _lock:
        return str(optimized(text))


def link_symbols(
    obj: bytes, symbols: tuple[str, ...], imports: Mapping[str, int], text: str
) -> tuple[Linked, dict[str, int]]:
    """Load `obj` (compiled from the IR `text`) into the process with LLJIT: the `Linked`
    keeps it loaded; the addresses of `symbols` by name."""
    library = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
    for name, address in imports.items():
        library.import_symbol(name, address)
    for symbol in symbols:
        library.export_symbol(symbol)
    with _lock:
        jit = _next_jit()
        try:
            tracker = library.link(jit, f"schedlang{next(_names)}")
        except RuntimeError as error:
            raise failed(f"link '{symbols[0]}'", error, text) from None
    return Linked(tracker, jit), {symbol: tracker[symbol] for symbol in symbols}


class Linked:
    """Code linked into the process, unloaded when this object is collected (its addresses
    must not be called after that). It holds the JIT the code went into, which must outlive
    the code."""

    def __init__(self, tracker: llvm.ResourceTracker, jit: llvm.LLJIT) -> None:
        unload = weakref.finalize(self, _unload, tracker, jit)
        unload.atexit = False  # at exit the process unmaps everything anyway


def _unload(tracker: llvm.ResourceTracker, jit: llvm.LLJIT) -> None:
    """Unload the code; `jit` is passed only to stay alive until then."""
    tracker.close()


def _next_jit() -> llvm.LLJIT:
    """The JIT the next library goes into (under `_lock`)."""
    global _jit, _jit_links
    if _jit is None or _jit_links == LINKS_PER_JIT:
        _jit, _jit_links = llvm.create_lljit_compiler(host().machine), 0
    _jit_links += 1
    return _jit
