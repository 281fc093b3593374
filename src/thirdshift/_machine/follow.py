"""Copying the CLI's stdout into the Session log, and its lines to the reader.

Every byte is written to the log as it arrives (unbuffered writes, so ``tail -f`` works and a
crash of ours loses nothing); the stream is split into lines at linear cost, and each line
that may hold an event and be parsed in bounded memory (not blank, not over
:data:`MAX_PARSED_LINE` or :data:`MAX_PARSED_MEMORY`; for a reader of JSON objects, one that
may hold one), decoded leniently, goes to ``on_line``.
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

# A line longer than this is logged but not parsed: no stream event is anywhere near as long,
# and holding it whole would make memory grow with a hostile stream.
# The real CLIs' longest lines are about 33 kB (Claude) and 1 MB (Codex).
MAX_PARSED_LINE = 4 * 1024 * 1024
# A line whose JSON would take more memory than this as Python objects is logged but not parsed
# either: a 4 MiB line of `{},{},...` took 100 MB more while it was read, a dict for each `{}`.
# Estimated from the line's structure outside its strings (where a text's commas and braces
# do not count): each `{` opens a dict (64 to 360 bytes with its first member), each `[` or `,`
# adds a list or a value (in an object, a key and a value), mostly new objects of 50 to 100
# bytes. A real event has some hundreds of marks; a Claude result listing 200,000 errors
# (3.6 MB) is estimated at 19 MB. Of the shapes that cost most per byte, the worst within the
# bound (a dict of 262,000 keys of 7 characters) took 45 MB more: `inspect` peaked at 68 MB.
MAX_PARSED_MEMORY = 24 * 1024 * 1024
_DICT_COST, _VALUE_COST = 256, 96
READ_SIZE = 1024 * 1024
# The stderr sidecar keeps this much; past it, one note line says how much more there was.
STDERR_KEPT = 64 * 1024 * 1024


# A run of blank or whitespace-only lines (ASCII whitespace, what ``bytes.isspace`` means),
# with the newlines around it: one substitution turns it into one newline, at the speed of a
# copy. A stream of nothing but newlines (a hostile one) then costs a scan, not a trip through
# the per-line path for each of its lines (64 MiB of them cost 12 s of CPU that way).
# Linear: the pattern starts only at a newline, and each run is scanned once.
_BLANK_RUN = re.compile(rb"\n[ \t\r\x0b\x0c\n]*\n")


# A whole line that may hold one JSON object: its first byte but JSON's whitespace is `{` and
# its last is `}` (what ``json.loads`` takes, and a reader of objects reads nothing else). A
# search of a chunk finds every such line in C; the lines between, of any shape (`x`, `{`,
# text, blank), never become Python objects: 64 MiB of `x` lines each handed on, to be refused
# by the reader, cost 10 s of CPU. Each search is anchored at the newline before the line and
# the byte after it (`{`, or the space, tab or CR the line starts with: a pattern each), two
# bytes the search finds without a try at every newline (a stream of newlines and short lines
# cost up to 1 s per 64 MiB with one pattern anchored at the newline alone). The newline after
# the line is looked at, not taken, as it is the next line's start. Linear: a line is scanned
# by `[^\n]*` once, and backtracked once.
_OBJECT_LINE, *_SPACED_OBJECT_LINES = (
    re.compile(rb"\n(" + head + rb"[^\n]*\}[ \t\r]*)(?=\n)")
    for head in (rb"\{", rb" [ \t\r]*\{", rb"\t[ \t\r]*\{", rb"\r[ \t\r]*\{")
)
_OBJECT = re.compile(rb"[ \t\r]*\{.*\}[ \t\r]*", re.DOTALL)


# A chunk whose lines are this long on average, or shorter, is searched for object lines; a
# chunk of longer lines is split.
_SHORT_LINE = 64


def _object_lines(chunk: bytes, first: int, last: int) -> list[bytes]:
    """The whole lines of ``chunk`` between its newlines at ``first`` and ``last`` that may hold
    an object, found in C; those that start with a space, a tab or a CR (no CLI writes one)
    put in order among the others by where each starts."""
    spaced = [
        (match.start(), match[1])
        for pattern in _SPACED_OBJECT_LINES
        for match in pattern.finditer(chunk, first, last + 1)
    ]
    if not spaced:
        return _OBJECT_LINE.findall(chunk, first, last + 1)
    found = _OBJECT_LINE.finditer(chunk, first, last + 1)
    return [line for _, line in sorted([*((m.start(), m[1]) for m in found), *spaced])]


def _blank(line: bytes) -> bool:
    return not line or line.isspace()


def _cost(line: bytes, start: int = 0, end: int | None = None) -> int:
    count = line.count
    values = count(b",", start, end) + count(b"[", start, end)
    return _DICT_COST * count(b"{", start, end) + _VALUE_COST * values


# Outside strings, a line is counted a window at a time: splitting a line of a million strings
# whole would hold a million pieces.
_WINDOW = 64 * 1024


def _parses_small(line: bytes) -> bool:
    """Whether ``line``'s JSON is estimated to take at most :data:`MAX_PARSED_MEMORY` parsed.

    Counted outside its strings, so that a long text full of commas and braces (code, prose) is
    still parsed; for a line that is no JSON the estimate means nothing, and the reader refuses
    the line anyway. Linear, in C scans: of the whole line, then, only if its marks in all
    cost too much, of its parts outside strings.
    """
    # No more marks than bytes: a line this short is within the bound whatever it holds.
    if len(line) <= MAX_PARSED_MEMORY // _DICT_COST or _cost(line) <= MAX_PARSED_MEMORY:
        return True
    # Without its escaped backslashes, then its escaped quotes, a line's quotes are exactly
    # those that open and close its strings.
    plain = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    cost, in_string = 0, False
    for start in range(0, len(plain), _WINDOW):
        pieces = plain[start : start + _WINDOW].split(b'"')
        cost += _cost(b"".join(pieces[int(in_string) :: 2]))  # the pieces outside strings
        if cost > MAX_PARSED_MEMORY:
            return False
        in_string ^= len(pieces) % 2 == 0  # an odd number of quotes in the window
    return True


class LineSplitter:
    """Splits a byte stream into lines, joining each one once (linear in its length).

    Blank and whitespace-only lines are dropped, as are lines over ``limit`` bytes and lines
    whose JSON would take more than :data:`MAX_PARSED_MEMORY` parsed: no event of any stream is
    any of these, so only lines that may be one, and be parsed in bounded memory, reach
    ``on_line``. With ``objects_only`` (for a reader that reads nothing but JSON objects), so
    does every line that cannot hold one: in a chunk of short lines, the lines that may are
    found in C, so that what lies between them costs a scan whatever its shape, never a Python
    step a line; a chunk of longer lines is split and each line tested, a step or two for every
    :data:`_SHORT_LINE` bytes at most.
    """

    def __init__(
        self,
        on_line: Callable[[str], None],
        limit: int = MAX_PARSED_LINE,
        *,
        objects_only: bool = False,
    ) -> None:
        self._on_line = on_line
        self._limit = limit
        self._objects_only = objects_only
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._too_long = False

    def feed(self, chunk: bytes) -> None:
        if self._objects_only:
            self._feed_objects(chunk)
            return
        pieces = _BLANK_RUN.sub(b"\n", chunk).split(b"\n")
        rest = pieces.pop()
        if pieces:
            # The first piece ends the line that the last chunk began (which may be empty).
            # Only it, the pending line and the rest may still be blank: every blank line
            # between two newlines of this chunk went in the substitution.
            self._add(pieces[0])
            self._end_pending()
        # Every other piece is a whole line: the loop that runs once per line stays lean.
        on_line, limit, small = self._on_line, self._limit, MAX_PARSED_MEMORY // _DICT_COST
        for piece in pieces[1:]:
            size = len(piece)
            if size <= limit and (size <= small or _parses_small(piece)):
                on_line(piece.decode("utf-8", "replace"))
        if rest:
            self._add(rest)

    def _feed_objects(self, chunk: bytes) -> None:
        first = chunk.find(b"\n")
        if first < 0:
            self._add(chunk)
            return
        self._add(chunk[:first])  # the end of the line the last chunk began
        self._end_pending()
        last = chunk.rfind(b"\n")
        if chunk.count(b"\n", first, last) * _SHORT_LINE > last - first:
            lines = _object_lines(chunk, first, last)
        else:
            # Lines of some length, as a CLI's events are: split as the plain way splits them
            # (a split is quicker than the searches), each one tested, at most one a line of
            # _SHORT_LINE bytes.
            lines = [
                line
                for line in chunk[first + 1 : last].split(b"\n")
                if (line[:1] == b"{" and line[-1:] == b"}") or _OBJECT.fullmatch(line)
            ]
        on_line, limit, small = self._on_line, self._limit, MAX_PARSED_MEMORY // _DICT_COST
        for line in lines:
            size = len(line)
            if size <= limit and (size <= small or _parses_small(line)):
                on_line(line.decode("utf-8", "replace"))
        if last + 1 < len(chunk):
            self._add(chunk[last + 1 :])

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

    def _may_hold_an_event(self, line: bytes) -> bool:
        if self._objects_only:
            return _OBJECT.fullmatch(line) is not None
        return not _blank(line)

    def _end_pending(self) -> None:
        if not self._too_long:
            line = b"".join(self._pending)
            if self._may_hold_an_event(line) and _parses_small(line):
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

    Only what the CLI wrote while it ran is read: once its exit is seen (:meth:`cli_exited`),
    what stdout holds then is read, and whatever comes after (from a process that kept the
    stream, or one that found a way to write on it) is logged as it came but read for
    nothing. With ``max_log_bytes``, the log keeps that many bytes (and the rest of the line
    that crosses them, up to :data:`MAX_PARSED_LINE` more); past them nothing more is logged
    or read, and :attr:`full` says the cap was reached, for the watch to stop the session.
    """

    def __init__(
        self,
        stdout_fd: int,
        log_fd: int,
        on_line: Callable[[str], None],
        *,
        read_size: int,
        interrupt: HeldInterrupt,
        max_log_bytes: int | None = None,
        objects_only: bool = False,
    ) -> None:
        self._stdout_fd = stdout_fd
        self._log_fd = log_fd
        self._lines = LineSplitter(on_line, objects_only=objects_only)
        self._read_size = read_size
        self._interrupt = interrupt
        self._unfed: bytes | None = None
        self._reading = True  # off once the CLI has exited and what it wrote was read
        self.max_log_bytes = max_log_bytes
        self.logged = 0
        """Bytes written to the log (or that would have been, had it been writable)."""
        self.dropped = 0
        """Bytes past the cap: neither logged nor read."""
        self.full = False
        """The log reached ``max_log_bytes``: nothing more is logged or read."""
        self._crossing = False  # the line that crossed the cap is still being kept
        self.open = True
        self.last_read_at = time.monotonic()
        """When stdout last gave bytes (``time.monotonic()``), or the copy began."""
        self.log_error: OSError | None = None
        """Why the log could not be written; the copy goes on into the reader only."""

    def copy_ready(self) -> bool:
        """Copy what stdout holds now; False once the stream ended."""
        self._feed_unfed()
        self._interrupt.hold()
        try:
            try:
                chunk = os.read(self._stdout_fd, self._read_size)
            except BlockingIOError:
                return self.open  # woken for nothing (the exit's read took it first)
            if chunk:
                self.last_read_at = time.monotonic()
            kept = self._within_cap(chunk)
            if kept and self.log_error is None:
                try:
                    write_all(self._log_fd, kept)
                except OSError as error:  # disk full, quota, I/O error
                    self.log_error = error
            self._unfed = kept if self._reading else None
        finally:
            self._interrupt.release()
        self._feed_unfed()
        if not chunk:
            self.finish()
        return self.open

    def cli_exited(self) -> None:
        """The CLI has exited: read what it wrote (all of it is in the stream by now), then
        read nothing more. Later bytes are still logged."""
        if not self._reading:
            return
        os.set_blocking(self._stdout_fd, False)
        while self.open and not self.full:
            before = self.logged + self.dropped
            self.copy_ready()
            if self.logged + self.dropped == before:
                break  # nothing more there now
        self._feed_unfed()
        self._reading = False
        self._lines.finish()  # the CLI's last line ended with it, newline or not

    def _within_cap(self, chunk: bytes) -> bytes:
        """The part of ``chunk`` the log keeps; counts what it drops."""
        cap = self.max_log_bytes
        if cap is None or not chunk:
            self.logged += len(chunk)
            return chunk
        if self.full:
            self.dropped += len(chunk)
            return b""
        if not self._crossing and self.logged + len(chunk) <= cap:
            self.logged += len(chunk)
            if self.logged == cap:
                # Exactly at the cap: full if its last line ended there, else that line crosses.
                self.full = chunk.endswith(b"\n")
                self._crossing = not self.full
            return chunk
        # The line holding the cap's last byte is kept to its end, at most MAX_PARSED_LINE
        # past the cap (a line that never ends must not fill the disk either).
        start = 0 if self._crossing else cap - self.logged - 1
        most = cap + MAX_PARSED_LINE - self.logged
        end = chunk.find(b"\n", start, most)
        if end < 0 and len(chunk) < most:
            self._crossing = True  # that line goes on in the next chunk
            self.logged += len(chunk)
            return chunk
        kept = chunk[: end + 1] if end >= 0 else chunk[:most]
        self.full, self._crossing = True, False
        self.logged += len(kept)
        self.dropped += len(chunk) - len(kept)
        return kept

    def finish(self) -> None:
        """The stream ended, or is no longer waited for: the last line, unended, counts."""
        self._feed_unfed()
        if self.open:
            self.open = False
            if self._reading:
                self._lines.finish()

    def _feed_unfed(self) -> None:
        chunk, self._unfed = self._unfed, None
        if chunk and self._reading:
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


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``, however many writes that takes (no buffer in
    between: a crash of ours loses nothing written)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
