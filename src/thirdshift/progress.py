"""Progress lines: the default sink prints them to stderr with the local time."""

from __future__ import annotations

import sys
import threading
import time

from thirdshift.shown import shown

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


def elapsed(seconds: float) -> str:
    """Whole seconds as ``8s`` under a minute, else ``5m 32s``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    return f"{whole // 60}m {whole % 60}s"


def duration(seconds: float) -> str:
    """A limit or a wait as ``45s``, ``30m0s`` or ``2h0m`` (whole seconds, rounded up)."""
    whole = max(0, int(-(-seconds // 1)))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60}s"
    return f"{whole // 3600}h{whole % 3600 // 60}m"
