"""The ``thirdshift`` command: one module per subcommand, each with ``register(subparsers)``.

Its exit codes are one table, :mod:`thirdshift._cli.exits`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from thirdshift._cli import check, demo, fake_model, inspect, run, worker
from thirdshift._cli.exits import Exit
from thirdshift._cli.subparsers import Subparsers
from thirdshift._version import __version__

# Each subcommand module offers register(subparsers), which adds its parser and sets
# `handler` (a function of the parsed arguments returning the exit code) as a default.
SUBCOMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    run.register,
    inspect.register,
    demo.register,
    check.register,
    fake_model.register,
    worker.register,
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line on a usage mistake, not argparse's usage block.
        self.exit(Exit.USAGE_ERROR, f"thirdshift: {message} (see thirdshift --help)\n")


def parser() -> argparse.ArgumentParser:
    """The whole command line, subcommands included."""
    top = _Parser(
        prog="thirdshift",
        description=(
            "Run headless coding-agent CLIs (claude -p, codex exec, opencode run, gemini, qwen) "
            "as unattended sessions."
        ),
    )
    top.add_argument("--version", action="version", version=f"thirdshift {__version__}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for register in SUBCOMMANDS:
        register(commands)
    return top


class _ClosedOutput:
    """stdout, when it was closed before we started (``thirdshift inspect LOG >&-``): the fd is
    /dev/null, and any write says the reader is gone, as a closed pipe would."""

    encoding = "utf-8"

    def write(self, _text: str) -> int:
        raise BrokenPipeError(9, "stdout was closed before thirdshift started")

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 1


def _open_closed_stdio() -> None:
    """Put /dev/null on each of fd 0, 1 and 2 that is closed, so that no file opened later (a
    pipe for a supervisor, a log) takes its number; a closed stdout reads as a reader gone."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if fd == 0:
                sys.stdin = open(fd, encoding="utf-8", closefd=False)  # noqa: SIM115
            elif fd == 1:
                sys.stdout = _ClosedOutput()
            else:
                sys.stderr = open(fd, "w", encoding="utf-8", closefd=False)  # noqa: SIM115


def main(argv: Sequence[str] | None = None) -> int:
    _open_closed_stdio()
    words = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is the CLI's own, never ours to parse: split it off first.
    passed_on: list[str] | None = None
    if "--" in words:
        at = words.index("--")
        words, passed_on = words[:at], words[at + 1 :]
    top = parser()
    args = top.parse_args(words)
    if args.command is None:
        top.print_help(sys.stderr)
        return Exit.USAGE_ERROR
    if passed_on is not None:
        if not hasattr(args, "cli_args"):
            top.error(f"{args.command} takes no arguments after --")
        args.cli_args = tuple(passed_on)
    handler = args.handler
    try:
        result: int = handler(args)
        sys.stdout.flush()  # so that a reader gone shows here, not at the interpreter's exit
    except KeyboardInterrupt:
        # Ctrl-C outside a session (typing a prompt, reading a long log): one line, no traceback.
        print("thirdshift: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except BrokenPipeError:
        # Whoever read stdout has gone (`thirdshift inspect LOG | head`): end quietly, as cat
        # would, with nothing left buffered for the exit to fail on again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.STDOUT_GONE
    return result
