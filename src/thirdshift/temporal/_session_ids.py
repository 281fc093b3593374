"""The id of a session still running, read from the head of its Session log.

The Resume rules learn a session's id when it ends; a heartbeat needs it as soon as the stream
names it (a retry after a lost worker sees only the last heartbeat). Every built-in CLI names
it in its first events, which the log holds byte for byte: so the log's head, read with the
Harness's own reader, gives it without reaching into the running session.
"""

from __future__ import annotations

from pathlib import Path

from thirdshift.harness import Harness

HEAD_BYTES = 256 * 1024
"""How much of a log is read for the id: the first events are small; a hostile stream that
writes megabytes before naming its session goes without one (the session starts again)."""


def session_id_in_log(log: Path, harness: Harness, worktree: Path) -> str | None:
    """The session id the log's first complete lines name, or ``None`` (no log, none yet)."""
    try:
        with open(log, "rb") as stream:
            head = stream.read(HEAD_BYTES)
    except OSError:
        return None
    complete, _, _ = head.rpartition(b"\n")
    reader = harness.reader(worktree)
    for line in complete.split(b"\n"):
        if not line.strip():
            continue
        try:
            reader.feed(line.decode("utf-8", "replace"))
        except Exception:
            # A plugin's reader is not ours to trust with any bytes: no id, never a crash.
            return None
        if reader.session_id is not None:
            return reader.session_id
    return None
