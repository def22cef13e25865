"""The ``schedlang`` command line.

Each subcommand is one ``_cmd_*`` function plus one entry in `_COMMANDS`, so adding a command
touches nothing else. Command functions import what they need themselves: ``schedlang --help``
must not pay for llvmlite or the CUDA driver.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple, TextIO


class _Command(NamedTuple):
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    del parser


def _cmd_info(args: argparse.Namespace) -> int:
    from .platform_info import platform_report

    print_table(platform_report())
    return 0


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="print only the table")
    parser.add_argument(
        "--target", default="auto", choices=("auto", "cpu", "cuda"), help="where to run"
    )
    parser.add_argument(
        "--size", type=_matmul_size, default=512, help="M = N = K of the matmul (default 512)"
    )


def _matmul_size(text: str) -> int:
    """A positive integer, else argparse's usage error (exit status 2) naming the option: an
    empty or negative matmul would reach numpy as a traceback, or time nothing."""
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if size < 1:
        raise argparse.ArgumentTypeError(
            f"{size} is not a matmul size; give a positive integer (M = N = K), e.g. --size 256"
        )
    return size


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run
    from .errors import LoweringError

    try:
        ok = run(size=args.size, target=args.target, show_loops=not args.quiet)
    except LoweringError as error:
        print(f"schedlang demo: {error}", file=sys.stderr)
        return 2
    return 0 if ok else 1


_COMMANDS: dict[str, _Command] = {
    "demo": _Command(
        help="a matmul under several schedules, each checked against the numpy reference",
        add_arguments=_demo_arguments,
        run=_cmd_demo,
    ),
    "info": _Command(
        help="what targets are usable here and why (LLVM, NVPTX, CUDA driver, GPU, ptxas)",
        add_arguments=_no_arguments,
        run=_cmd_info,
    ),
}


def print_table(rows: Sequence[tuple[str, str]], file: TextIO | None = None) -> None:
    """Prints ``item: value`` rows with the values aligned, so a glance down one column finds
    what is missing."""
    out = sys.stdout if file is None else file
    width = max((len(item) for item, _ in rows), default=0) + 1
    for item, value in rows:
        print(f"{item + ':':<{width}} {value}", file=out)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subparser per entry of `_COMMANDS`."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="schedlang",
        description="Tensor algorithms written once, schedules tried freely, on CPU or CUDA.",
    )
    parser.add_argument("--version", action="version", version=f"schedlang {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in _COMMANDS.items():
        sub = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``schedlang`` script and of ``python -m schedlang``; returns the exit
    status rather than exiting, so tests can call it in-process."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.run(args)
