"""Messages between a tuning run and its compile processes: pickles, each after its length,
over the processes' standard input and output.

From a process, once it has loaded what builds need: ``("ready",)``. To a process: ``("task",
job, task_blob, target)`` once per task, then ``("build", job, number)``, each answered with
a `building.Built`.
"""

from __future__ import annotations

import pickle
import struct
from typing import BinaryIO

HEADER = struct.Struct("<Q")


def send(stream: BinaryIO, value: object) -> None:
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> object:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the other end closed the pipe")
    (size,) = HEADER.unpack(header)
    return pickle.loads(stream.read(size))
