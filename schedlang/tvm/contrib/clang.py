"""``tvm.contrib.clang.create_llvm``: C or C++ source compiled to LLVM IR by clang, for a
declared intrinsic's functions (``pragma(axis, "import_llvm", ir)``). clang is not part of
schedlang: where it is not installed, the call says so."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ...errors import SchedlangError


def create_llvm(inputs, output: str | None = None, options=None, cc: str | None = None) -> str:
    """The LLVM IR of the C++ source `inputs` (a string, or a list of them), also written to
    `output` when given."""
    compiler = shutil.which(cc or "clang")
    if compiler is None:
        raise SchedlangError(
            f"create_llvm needs a C compiler, '{cc or 'clang'}', which is not installed here: "
            "install clang, or pass LLVM IR you compiled elsewhere to "
            'pragma(axis, "import_llvm", ir)'
        )
    sources = [inputs] if isinstance(inputs, str) else list(inputs)
    texts = []
    with tempfile.TemporaryDirectory() as folder:
        for k, code in enumerate(sources):
            source = Path(folder) / f"input{k}.cc"
            source.write_text(code)
            target = Path(folder) / f"input{k}.ll"
            done = subprocess.run(
                [
                    compiler,
                    "-O2",
                    "-S",
                    "-emit-llvm",
                    *(options or []),
                    str(source),
                    "-o",
                    str(target),
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise SchedlangError(f"clang failed to compile the source:\n{done.stderr}")
            texts.append(target.read_text())
    text = "\n".join(texts)
    if output is not None:
        Path(output).write_text(text)
    return text
