"""Run a fake CLI: ``python -m thirdshift.testing.fakecli claude|codex [ARGS...]``.

The shims that ``FakeCLIs`` writes run this file by its path instead, with ``python -S``, and
then the package's modules are imported by their own names without running the ``__init__``
of ``thirdshift`` and of ``thirdshift.testing``: those import the whole library, and pluggy,
which ``-S`` (no site-packages) cannot even find. ``bench/fake_start.py`` on the 2-core bench
machine: a fake call that says one line takes 41-45 ms so (``python -S -c pass``: 7 ms), and
importing ``thirdshift.testing`` the ordinary way would add ~50 ms to every call.
"""

from __future__ import annotations

import os
import sys

if not __package__:
    import types

    # Run by path: make the parent packages importable as plain folders (their __path__),
    # which the import system then searches for the submodules, and nothing else.
    folder = os.path.dirname(os.path.abspath(__file__))
    sys.path.remove(folder)  # this folder's modules are not top-level modules
    for name in ("thirdshift.testing.fakecli", "thirdshift.testing", "thirdshift"):
        package = types.ModuleType(name)
        package.__path__ = [folder]
        sys.modules[name] = package
        folder = os.path.dirname(folder)

from thirdshift.testing.fakecli._dialect import dialect_module
from thirdshift.testing.fakecli._play import Call
from thirdshift.testing.fakecli._procs import split_off_worker
from thirdshift.testing.fakecli._state import HARNESSES, STATE_ENV, Folder


def main(argv: list[str]) -> int:
    """``<claude|codex|opencode|gemini|qwen> <args…>``: play the next scripted call of that fake."""
    if not argv or argv[0] not in HARNESSES:
        sys.stderr.write(
            f"usage: python -m thirdshift.testing.fakecli {'|'.join(HARNESSES)} [ARGS...]\n"
        )
        return 2
    root = os.environ.get(STATE_ENV)
    if not root or not os.path.isfile(os.path.join(root, "state.json")):
        sys.stderr.write(
            f"fake {argv[0]}: no state folder: {STATE_ENV} must name one "
            "(use the fake_cli_on_path fixture, or FakeCLIs)\n"
        )
        return 2
    entry = split_off_worker() if dialect_module(argv[0]).PROFILE.runs_a_worker else None
    Call(argv[0], argv[1:], Folder(root), entry).play()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
