"""``tvm.contrib.utils.tempdir``: a temporary folder for saved modules."""

from __future__ import annotations

import os
import shutil
import tempfile


class TempDirectory:
    """A temporary folder, removed with this object."""

    def __init__(self) -> None:
        self.temp_dir = tempfile.mkdtemp(prefix="schedlang-tvm-")

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        return sorted(os.listdir(self.temp_dir))

    def remove(self) -> None:
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __del__(self) -> None:
        self.remove()


def tempdir() -> TempDirectory:
    return TempDirectory()
