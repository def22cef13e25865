"""LLVM for the host: one target machine and one JIT per process, through llvmlite.binding.

Generated IR is parsed, verified, optimised with LLVM's default ``-O3`` pipeline (the new pass
manager, tuned for the host CPU and its features, no fast-math; LLVM's own loop unroller is off
because unrolling is the schedule's decision, and it costs a third of the compile time), compiled
to an object file (which the compile cache may keep on disk), and linked into the process by
LLJIT. Anything that fails in here is schedlang's bug, never the user's: it is an `InternalError`
with the IR attached.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import llvmlite.binding as llvm

from ..errors import InternalError
from .cpu import CpuTarget

_lock = threading.Lock()
_names = itertools.count()


@dataclass(frozen=True)
class Host:
    target: CpuTarget
    machine: llvm.TargetMachine
    jit: llvm.LLJIT


@functools.cache
def host() -> Host:
    """The host's target machine and JIT, made on first use (LLVM initialisation is slow)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm is not None:
        llvm.load_library_permanently(libm)
    triple = llvm.get_process_triple()
    cpu = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features().flatten()
    machine = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, codemodel="jitdefault", jit=True
    )
    return Host(CpuTarget(triple, cpu, features), machine, llvm.create_lljit_compiler(machine))


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
    builder.getModulePassManager().run(module, builder)
    return module


def object_code(text: str) -> bytes:
    with _lock:
        return host().machine.emit_object(optimized(text))


def assembly(text: str) -> str:
    with _lock:
        return host().machine.emit_assembly(optimized(text))


def optimized_ir(text: str) -> str:
    with _lock:
        return str(optimized(text))


def link(obj: bytes, symbol: str, imports: Mapping[str, int], text: str) -> tuple[object, int]:
    """Load `obj` (compiled from the IR `text`) into the process; the tracker keeps it alive,
    the int is `symbol`'s address."""
    library = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
    for name, address in imports.items():
        library.import_symbol(name, address)
    library.export_symbol(symbol)
    with _lock:
        try:
            tracker = library.link(host().jit, f"schedlang{next(_names)}")
        except RuntimeError as error:
            raise failed(f"link '{symbol}'", error, text) from None
    return tracker, tracker[symbol]
