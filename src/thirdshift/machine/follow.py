"""Following a supervised CLI: its stdout into the Session log and the reader, its status.

The follower copies every byte of stdout to the log as it arrives (unbuffered writes, so
``tail -f`` works and a crash of ours loses nothing), splits it into lines at linear cost,
and hands each line, decoded leniently, to ``on_line``. It ends when stdout has ended and the
supervisor is gone; it asks the supervisor to stop what is left once the CLI has exited and the
stream has ended, or once the drain after the CLI's exit runs out (something it started still
holds stdout).
"""

from __future__ import annotations

import os
import selectors
import signal
import time
from collections.abc import Callable

from thirdshift.machine.supervised import CliExit, Supervised

# A line longer than this is logged but not parsed: no stream event is anywhere near as long,
# and holding it whole would make memory grow with a hostile stream.
MAX_PARSED_LINE = 64 * 1024 * 1024
READ_SIZE = 1024 * 1024


class Lines:
    """Splits a byte stream into lines, joining each one once (linear in its length)."""

    def __init__(self, on_line: Callable[[str], None], limit: int = MAX_PARSED_LINE) -> None:
        self._on_line = on_line
        self._limit = limit
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._too_long = False

    def feed(self, chunk: bytes) -> None:
        pieces = chunk.split(b"\n")
        rest = pieces.pop()
        whole = iter(pieces)
        if pieces and (self._pending or self._too_long):
            self._add(next(whole))  # the end of the line that the last chunk began
            if not self._too_long:
                self._emit(b"".join(self._pending))
            self._pending.clear()
            self._pending_size = 0
            self._too_long = False
        # Every other piece is a whole line: the loop that runs once per line stays lean.
        on_line, limit = self._on_line, self._limit
        for piece in whole:
            if len(piece) <= limit:
                on_line(piece.decode("utf-8", "replace"))
        if rest:
            self._add(rest)

    def finish(self) -> None:
        """The stream ended: a last line without a final newline still counts."""
        if self._pending and not self._too_long:
            self._emit(b"".join(self._pending))
        self._pending.clear()
        self._pending_size = 0
        self._too_long = False

    def _add(self, piece: bytes) -> None:
        if self._too_long:
            return
        self._pending_size += len(piece)
        if self._pending_size > self._limit:
            self._too_long = True
            self._pending.clear()
        else:
            self._pending.append(piece)

    def _emit(self, line: bytes) -> None:
        self._on_line(line.decode("utf-8", "replace"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Follower:
    """Follows one supervised CLI until its stream has ended and its supervisor is gone.

    ``run`` may be called again after it was interrupted (a ``KeyboardInterrupt`` raised while
    waiting): it carries on where it was, so that what the CLI writes while it is being stopped
    still reaches the log.
    """

    def __init__(
        self,
        supervised: Supervised,
        log_fd: int,
        on_line: Callable[[str], None],
        *,
        drain: float,
    ) -> None:
        self._supervised = supervised
        self._log_fd = log_fd
        self._lines = Lines(on_line)
        self._drain = drain
        self._selector = selectors.DefaultSelector()
        self._selector.register(supervised.stdout_fd, selectors.EVENT_READ)
        self._selector.register(supervised.status_fd, selectors.EVENT_READ)
        self._status_buffer = b""
        self._stdout_open = True
        self._status_open = True
        self._stop_sent = False
        self._gone = False  # the supervisor said everything below it is gone
        self._drain_deadline: float | None = None
        self.cli_exit: CliExit | None = None
        self.spawn_error: str | None = None
        self.log_error: OSError | None = None

    def stop(self) -> None:
        """Ask the supervisor to stop everything; following goes on until all is gone."""
        if not self._stop_sent:
            self._stop_sent = True
            self._supervised.stop()

    def run(self) -> None:
        while self._stdout_open or self._status_open:
            timeout = None
            if self._drain_deadline is not None and self._stdout_open and not self._stop_sent:
                timeout = self._drain_deadline - time.monotonic()
                if timeout <= 0:
                    self.stop()  # something the CLI started still holds stdout
                    continue
            for key, _ in self._selector.select(timeout):
                if key.fd == self._supervised.stdout_fd:
                    self._read_stdout()
                else:
                    self._read_status()
        self._selector.close()

    def _read_stdout(self) -> None:
        # Never more than the pipe holds: a read allocates all it asks for before it shrinks.
        chunk = os.read(self._supervised.stdout_fd, min(READ_SIZE, self._supervised.pipe_size))
        if chunk:
            if self.log_error is None:
                try:
                    _write_all(self._log_fd, chunk)
                except OSError as error:  # disk full, quota, I/O error
                    # The log is the record of the session: one that cannot keep it is stopped,
                    # not run on with what it does unrecorded.
                    self.log_error = error
                    self.stop()
            self._lines.feed(chunk)
            return
        self._stdout_open = False
        self._selector.unregister(self._supervised.stdout_fd)
        self._lines.finish()
        if self.cli_exit is not None:
            self.stop()  # the CLI and its stream are done: clear away whatever is left

    def _read_status(self) -> None:
        data = os.read(self._supervised.status_fd, 4096)
        if not data:
            self._status_open = False
            self._selector.unregister(self._supervised.status_fd)
            if not self._gone:
                # The supervisor died without tearing down (someone SIGKILLed it): what is left
                # of its process group, the CLI included, would hold stdout open for ever.
                try:
                    os.killpg(self._supervised.process_group, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return
        self._status_buffer += data
        *lines, self._status_buffer = self._status_buffer.split(b"\n")
        for line in lines:
            word, _, rest = line.decode().partition(" ")
            if word == "exit":
                self.cli_exit = CliExit.from_wait_status(int(rest))
                self._drain_deadline = time.monotonic() + self._drain
                if not self._stdout_open:
                    self.stop()
            elif word == "spawn-error":
                self.spawn_error = rest
            elif word == "gone":
                self._gone = True
