"""The ``thirdshift`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from thirdshift._version import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thirdshift",
        description="Run headless coding-agent CLIs as unattended sessions.",
    )
    parser.add_argument("--version", action="version", version=f"thirdshift {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
