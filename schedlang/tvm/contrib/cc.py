"""``tvm.contrib.cc.create_shared``: a module saved by ``save`` made the library
``load_module`` reads. schedlang's saved modules need no C compiler: the one module given is
the library; anything else (object files of another compiler, several modules to link) needs a
C compiler and linker that schedlang does not use, and is refused saying so."""

from __future__ import annotations

import shutil

from ...errors import LaunchError
from ...runtime.saved import read


def create_shared(output: str, objects: object, options: object = None, cc: object = None) -> None:
    files = [objects] if isinstance(objects, str) else list(objects)
    if len(files) != 1 or not _saved_module(files[0]):
        raise LaunchError(
            f"create_shared({output!r}, {files!r}) links object files with a C compiler, which "
            "schedlang does not use: pass one module written by Module.save, or call "
            "Module.export_library"
        )
    shutil.copyfile(files[0], output)


def _saved_module(path: str) -> bool:
    try:
        read(path)
    except (LaunchError, OSError):
        return False
    return True
