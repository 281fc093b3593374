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

from thirdshift.testing.fakecli.play import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
