"""Ending a command that ran Temporal's SDK in-process, without interpreter finalization.

Once everything has stopped (the sessions, their trees, the workers), the SDK's native threads
may still call into Python while the interpreter finalizes, which aborts the process (SIGABRT,
seen once in a few dozen runs) after a clean end (docs/fleet.md, "A gotcha"). So such a
command ends here, its output flushed, with nothing left for finalization to do.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Flush stdout and stderr (as far as they still take it), then end with ``code``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
