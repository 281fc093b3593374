"""What differs between two plays of one scenario by design, made equal: ids, paths, times.

A fake CLI names its sessions ``fake-session-1``, the real one a UUID; each play runs in its own
temporary folder, on its own port, for its own number of seconds, at its own cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from thirdshift.testing._placeholders import FOLDER, PORT

SESSION = "<session>"
_PORT = re.compile(r"(127\.0\.0\.1|localhost):\d+")
_LOGGING = re.compile(r"^(.*logging the session to ).*$")
# "task: session ended after 5s: 2 turns, $0.00035": the time and the usage are the model's;
# "task: session stopped after 1s, as asked …": the time is the play's.
_ENDED = re.compile(r"^(.*: session (?:ended|stopped)) after .*$")


def port_hidden(text: str) -> str:
    """``text`` with the fake model's port (its own each play) replaced by ``<port>``."""
    return _PORT.sub(rf"\1:{PORT}", text)


def normalised(text: str, folder: Path, session_ids: Iterable[str]) -> str:
    """``text`` with the play's folder, its session ids and the fake model's port replaced."""
    for root in sorted({str(folder), str(folder.resolve())}, key=len, reverse=True):
        text = text.replace(root, FOLDER)
    for session_id in sorted(set(session_ids), key=len, reverse=True):
        if session_id:
            text = text.replace(session_id, SESSION)
    return port_hidden(text)


def progress_line(line: str, folder: Path, session_ids: Iterable[str]) -> str:
    """A progress line, normalised, with the log's path and the session's time and usage cut."""
    line = _LOGGING.sub(r"\1<log>", line)
    line = _ENDED.sub(r"\1", line)
    return normalised(line, folder, session_ids)
