"""Copying the CLI's stdout into the Session log, and its lines to the reader.

Every byte is written to the log as it arrives (unbuffered writes, so ``tail -f`` works and a
crash of ours loses nothing); the stream is split into lines at linear cost, and each line
that may hold an event and be parsed in bounded memory (not blank, not over
:data:`MAX_PARSED_LINE` or :data:`MAX_PARSED_MARKS`), decoded leniently, goes to ``on_line``.
``thirdshift inspect`` reads a Session log back through the same splitter. A
``KeyboardInterrupt`` never lands between a read and the log write: see :class:`HeldInterrupt`.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from thirdshift.machine.fdio import write_all

# A line longer than this is logged but not parsed: no stream event is anywhere near as long,
# and holding it whole would make memory grow with a hostile stream.
# The real CLIs' longest lines are about 33 kB (Claude) and 1 MB (Codex).
MAX_PARSED_LINE = 4 * 1024 * 1024
# A line with more JSON structure than this is logged but not parsed either: more `,`, `{` and
# `[` outside its strings. Each JSON value but the first follows a `,` or opens a `{` or `[`'s
# contents, and an object's member is two (key and value), so a line holds at most twice as
# many values, plus one. Parsed, each value is a Python object of 30 to 200 bytes: a 4 MiB line
# of `{},{},...` would take over 100 MB while it is read. A real event has some hundreds of
# marks (its text is in a few strings, where marks do not count).
MAX_PARSED_MARKS = 100_000
READ_SIZE = 1024 * 1024
# The stderr sidecar keeps this much; past it, one note line says how much more there was.
STDERR_KEPT = 64 * 1024 * 1024


# A run of blank or whitespace-only lines (ASCII whitespace, what ``bytes.isspace`` means),
# with the newlines around it: one substitution turns it into one newline, at the speed of a
# copy. A stream of nothing but newlines (a hostile one) then costs a scan, not a trip through
# the per-line path for each of its lines (64 MiB of them cost 12 s of CPU that way).
# Linear: the pattern starts only at a newline, and each run is scanned once.
_BLANK_RUN = re.compile(rb"\n[ \t\r\x0b\x0c\n]*\n")


def _blank(line: bytes) -> bool:
    return not line or line.isspace()


def _marks(line: bytes, start: int = 0, end: int | None = None) -> int:
    count = line.count
    return count(b",", start, end) + count(b"{", start, end) + count(b"[", start, end)


def _little_structure(line: bytes) -> bool:
    """Whether ``line`` has at most :data:`MAX_PARSED_MARKS` marks outside its JSON strings.

    Outside its strings, so that a long text full of commas and braces (code, prose) is still
    parsed. For a line that is no JSON the count means nothing, and the reader refuses the
    line anyway. Linear, in C scans of the line and one copy of it, and never more than about
    2 * MAX_PARSED_MARKS rounds of Python: the line is walked string by string, and a JSON
    line with more strings than that has more marks too (each string but the first is a key
    that follows a `,` or a `{`, or an element that follows a `,` or a `[`, or the value of
    a key), so the walk stops there, or as soon as it has counted too many.
    """
    if _marks(line) <= MAX_PARSED_MARKS:
        return True
    # Without its escaped backslashes, then its escaped quotes, a line's quotes are exactly
    # those that open and close its strings.
    plain = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    count = strings = start = 0
    while count <= MAX_PARSED_MARKS and strings <= 2 * MAX_PARSED_MARKS + 1:
        opening = plain.find(b'"', start)
        count += _marks(plain, start, None if opening < 0 else opening)
        closing = -1 if opening < 0 else plain.find(b'"', opening + 1)
        if closing < 0:
            return count <= MAX_PARSED_MARKS  # the end of the line, or of it in a string
        strings += 1
        start = closing + 1
    return False


class LineSplitter:
    """Splits a byte stream into lines, joining each one once (linear in its length).

    Blank and whitespace-only lines are dropped, as are lines over ``limit`` bytes and lines
    of more JSON structure than :data:`MAX_PARSED_MARKS`: no event of any stream is any of these,
    so only lines that may be one, and that may be parsed in bounded memory, reach ``on_line``.
    """

    def __init__(self, on_line: Callable[[str], None], limit: int = MAX_PARSED_LINE) -> None:
        self._on_line = on_line
        self._limit = limit
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._too_long = False

    def feed(self, chunk: bytes) -> None:
        pieces = _BLANK_RUN.sub(b"\n", chunk).split(b"\n")
        rest = pieces.pop()
        if pieces:
            # The first piece ends the line that the last chunk began (which may be empty).
            # Only it, the pending line and the rest may still be blank: every blank line
            # between two newlines of this chunk went in the substitution.
            self._add(pieces[0])
            self._end_pending()
        # Every other piece is a whole line: the loop that runs once per line stays lean.
        # A line has no more marks than bytes: most are too short to need counting.
        on_line, limit, small = self._on_line, self._limit, MAX_PARSED_MARKS
        for piece in pieces[1:]:
            size = len(piece)
            if size <= limit and (size <= small or _little_structure(piece)):
                on_line(piece.decode("utf-8", "replace"))
        if rest:
            self._add(rest)

    def finish(self) -> None:
        """The stream ended: a last line without a final newline still counts."""
        self._end_pending()

    def _add(self, piece: bytes) -> None:
        if self._too_long:
            return
        self._pending_size += len(piece)
        if self._pending_size > self._limit:
            self._too_long = True
            self._pending.clear()
        else:
            self._pending.append(piece)

    def _end_pending(self) -> None:
        if not self._too_long:
            line = b"".join(self._pending)
            if not _blank(line) and _little_structure(line):
                self._on_line(line.decode("utf-8", "replace"))
        self._pending.clear()
        self._pending_size = 0
        self._too_long = False


SigintHandler = Callable[[int, FrameType | None], object]


class HeldInterrupt:
    """While entered, SIGINT's Python handler waits for :meth:`release` if :meth:`hold` is on.

    A ``KeyboardInterrupt`` raised just after ``os.read`` returned would lose what it read: the
    handler (Python's own, or one the program set) runs instead as soon as the chunk is safe.
    Only the main thread runs signal handlers, so elsewhere this does nothing.
    """

    def __init__(self) -> None:
        self._previous: SigintHandler | None = None
        self._holding = False
        self._held: tuple[int, FrameType | None] | None = None

    def __enter__(self) -> HeldInterrupt:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):  # SIG_DFL and SIG_IGN raise nothing: nothing to hold
                self._previous = previous
                signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *_: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def hold(self) -> None:
        self._holding = True

    def release(self) -> None:
        """Stop holding; run the handler now if SIGINT came while held (it may raise)."""
        self._holding = False
        held, self._held = self._held, None
        if held is not None and self._previous is not None:
            self._previous(*held)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self._holding:
            self._held = (signum, frame)
        elif self._previous is not None:
            self._previous(signum, frame)


class StdoutCopy:
    """Copies one stream into the Session log and splits it into lines for ``on_line``.

    A chunk read is written to the log before anything may interrupt, and kept until it is
    fed: a call interrupted while feeding it leaves nothing to redo, and one interrupted
    before feeding it feeds it first on the next call.
    """

    def __init__(
        self,
        stdout_fd: int,
        log_fd: int,
        on_line: Callable[[str], None],
        *,
        read_size: int,
        interrupt: HeldInterrupt,
    ) -> None:
        self._stdout_fd = stdout_fd
        self._log_fd = log_fd
        self._lines = LineSplitter(on_line)
        self._read_size = read_size
        self._interrupt = interrupt
        self._unfed: bytes | None = None
        self.open = True
        self.last_read_at = time.monotonic()
        """When stdout last gave bytes (``time.monotonic()``), or the copy began."""
        self.log_error: OSError | None = None
        """Why the log could not be written; the copy goes on into the reader only."""

    def copy_ready(self) -> bool:
        """Copy what stdout holds now (it must be readable); False once the stream ended."""
        self._feed_unfed()
        self._interrupt.hold()
        try:
            chunk = os.read(self._stdout_fd, self._read_size)
            if chunk:
                self.last_read_at = time.monotonic()
            if chunk and self.log_error is None:
                try:
                    write_all(self._log_fd, chunk)
                except OSError as error:  # disk full, quota, I/O error
                    self.log_error = error
            self._unfed = chunk
        finally:
            self._interrupt.release()
        self._feed_unfed()
        if not chunk:
            self.finish()
        return self.open

    def finish(self) -> None:
        """The stream ended, or is no longer waited for: the last line, unended, counts."""
        self._feed_unfed()
        if self.open:
            self.open = False
            self._lines.finish()

    def _feed_unfed(self) -> None:
        chunk, self._unfed = self._unfed, None
        if chunk:
            self._lines.feed(chunk)


class StderrCopy:
    """Copies the CLI's stderr into the sidecar, up to ``kept`` bytes, and counts the rest."""

    def __init__(
        self,
        stderr_fd: int,
        sidecar_fd: int,
        *,
        read_size: int,
        interrupt: HeldInterrupt,
        kept: int = STDERR_KEPT,
    ) -> None:
        self._stderr_fd = stderr_fd
        self._sidecar_fd = sidecar_fd
        self._read_size = read_size
        self._interrupt = interrupt
        self._room = kept
        self.not_kept = 0
        self.open = True

    def copy_ready(self) -> bool:
        """Copy what stderr holds now (it must be readable); False once the stream ended."""
        if self._copy_once() == 0:
            self.open = False
        return self.open

    def _copy_once(self) -> int | None:
        """Copy one read's worth; how much was read (None: nothing there yet)."""
        self._interrupt.hold()
        try:
            try:
                chunk = os.read(self._stderr_fd, self._read_size)
            except BlockingIOError:
                return None
            kept = chunk[: self._room]
            if kept:
                try:
                    write_all(self._sidecar_fd, kept)
                except OSError:
                    kept = b""  # the sidecar is a help, not the record: carry on without it
                    self._room = 0
            self._room -= len(kept)
            self.not_kept += len(chunk) - len(kept)
            return len(chunk)
        finally:
            self._interrupt.release()

    def finish(self) -> None:
        """Copy what is left without waiting for more, then say what was not kept."""
        os.set_blocking(self._stderr_fd, False)
        while self.open and self._copy_once():
            pass
        self.open = False
        if self.not_kept:
            note = f"\nthirdshift: {self.not_kept} more bytes of stderr were not kept\n"
            try:
                write_all(self._sidecar_fd, note.encode())
            except OSError:
                pass
        self.not_kept = 0
