"""Run a fake CLI: ``python -m thirdshift.testing.fakecli claude|codex [ARGS...]``.

The shims that ``FakeCLIs`` writes run this file by its path instead, which skips importing
``thirdshift`` (its ``__init__`` loads the whole library: tens of milliseconds on every call,
which would swamp what benchmarks measure), and with ``python -S``: the fake needs only the
standard library, and the site-packages set-up (``.pth`` files) costs some 20 ms more. Run so,
this folder is ``sys.path[0]`` and the fake program is imported as the top-level package
``player``; nothing else of this package is imported.
"""

from __future__ import annotations

import importlib
import sys

if __package__:
    from .player.main import main
else:
    main = importlib.import_module("player.main").main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
