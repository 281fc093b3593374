"""Progress lines: the default sink prints them to stderr with the local time."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from thirdshift._shown import shown

_write_lock = threading.Lock()


def to_stderr(line: str) -> None:
    """Print ``thirdshift: HH:MM:SS <line>`` to stderr, whole and flushed."""
    # Shown here too, whoever made the line: escaping and redacting twice change nothing more.
    text = f"thirdshift: {time.strftime('%H:%M:%S')} {shown(line)}\n"
    with _write_lock:  # one write per line: sessions in threads never interleave mid-line
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass  # stderr closed (None, EBADF) or gone: a progress line never stops a session


def to_stderr_as(name: str) -> Callable[[str], None]:
    """The default sink of one run's sessions: ``thirdshift: HH:MM:SS [name] <line>``.

    ``name`` is the run's log name (``Logs.name``), so that the lines of runs going on at once
    in one process or terminal can be told apart.
    """

    def sink(line: str) -> None:
        to_stderr(f"[{name}] {line}")

    return sink


def duration(seconds: float) -> str:
    """How thirdshift writes every duration it prints: ``45s``, ``1m 5s``, ``2h 5m`` (``1m``,
    ``2h`` when the rest is 0). Seconds are whole from a minute on; under one, a fraction is
    kept (``1.5s``: a limit someone set). A caller that must not overstate (time elapsed)
    passes whole seconds rounded down, one that must not understate (a wait) rounds up."""
    if seconds < 60 and not float(seconds).is_integer():
        return f"{max(seconds, 0.0):g}s"
    hours, rest = divmod(max(int(seconds), 0), 3600)
    minutes, whole = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {whole}s" if whole else f"{minutes}m"
    return f"{whole}s"
