"""How the supervisor is started: its path, and the few lines that load it from its bytecode."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from thirdshift._machine import supervisor

SUPERVISOR = Path(supervisor.__file__)
"""The supervisor package's ``__init__.py``, run by its path: ``python -I -S -c LAUNCH
SUPERVISOR ARGS...``, isolated from the environment and the user's site, with the standard
library only."""
# Loads the package at argv[1] through the import system, so from its cached bytecode: run as a
# script (``python supervisor.py``) it would be compiled on every start, 8 to 16 ms of CPU a
# session here. It is loaded under a name of its own, its modules found beside argv[1], so
# nothing else of thirdshift (nor its dependencies) is imported.
LAUNCH = (
    "import sys, importlib.util as u\n"
    "p = sys.argv[1]\n"
    "s = u.spec_from_file_location('thirdshift_supervisor', p,"
    " submodule_search_locations=[p.rpartition('/')[0]])\n"
    "m = u.module_from_spec(s)\n"
    "sys.modules[s.name] = m\n"
    "s.loader.exec_module(m)\n"
    "m.run(sys.argv[2:])\n"
)


def launch_argv(program: Path, args: Sequence[str]) -> list[str]:
    """The argv that runs the supervisor at ``program`` with ``args``."""
    return [sys.executable, "-I", "-S", "-c", LAUNCH, str(program), *args]
