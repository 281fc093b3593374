"""The supervisor's status lines, read as untrusted input: bounded, in order, or a violation.

The channel is a socket only the supervisor holds, so nothing else should be able to write on
it; it is parsed as if anything could all the same. Lines are ASCII, at most
:data:`~thirdshift._machine.supervisor.protocol.MAX_LINE` bytes; the buffer is split once per
byte that arrives (never re-split whole); each word comes when the protocol allows it
(``started`` first and once, ``exit`` once after it, ``gone`` last); ``left`` entries are
capped as they arrive.
Anything else is a :attr:`StatusReader.violation`, after which nothing more is read: the
adapter kills the tree and fails the session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from thirdshift._machine.supervisor.protocol import (
    EXIT,
    GONE,
    LEFT,
    LEFT_BYTES,
    LEFT_LISTED,
    LEFT_UNLISTED,
    LISTENING,
    MAX_LINE,
    SPAWN_ERROR,
    STARTED,
)

_NUMBER = re.compile(rb"[0-9]{1,10}")
_HEX = re.compile(rb"(?:[0-9a-f]{2}){1,%d}" % LEFT_BYTES)
_TEXT = re.compile(rb"[\x20-\x7e]{1,%d}" % MAX_LINE)
MAX_WAIT_STATUS = 0xFFFF


@dataclass
class StatusReader:
    """What the supervisor said so far; fed bytes as they arrive."""

    cli_pid: int | None = None
    wait_status: int | None = None
    spawn_error: str | None = None
    left: list[bytes] = field(default_factory=list)
    """Each process left running, as the NUL-separated bytes of its command line."""
    left_unlisted: int = 0
    listening: int | None = None
    """How many listening sockets a sandbox's pid 1 handed over (None: none was)."""
    said_gone: bool = False
    violation: str | None = None
    _buffer: bytearray = field(default_factory=bytearray)
    _fds: int = 0  # descriptors that came with the data being read

    def feed(self, data: bytes, fds_with_it: int = 0) -> list[str]:
        """Take in ``data`` (which carried ``fds_with_it`` descriptors); return the words read.

        Descriptors may come only with the ``started`` line, and before it with a sandbox's
        ``listening`` line, which must be the first of all, each at the start of ``data``.
        """
        if self.violation is not None:
            return []
        first = self.cli_pid is None and self.listening is None and self.spawn_error is None
        if fds_with_it and (
            self.cli_pid is not None
            or self._buffer
            or not (
                data.startswith(f"{STARTED} ".encode())
                or (first and data.startswith(f"{LISTENING} ".encode()))
            )
        ):
            self.violation = "descriptors sent other than with 'started' or 'listening'"
            return []
        self._fds = fds_with_it
        words: list[str] = []
        start = 0
        while self.violation is None:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if len(self._buffer) + end - start > MAX_LINE:
                self.violation = "a line too long"
                break
            self._buffer += data[start:end]
            line = bytes(self._buffer)
            self._buffer.clear()
            start = end + 1
            word = self._take(line)
            if word is not None:
                words.append(word)
        if self.violation is None:
            rest = len(data) - start
            if len(self._buffer) + rest > MAX_LINE:
                self.violation = "a line too long"
            else:
                self._buffer += data[start:]
        return words

    def _take(self, line: bytes) -> str | None:
        word, _, rest = line.partition(b" ")
        if self.said_gone:
            return self._refused("a line after 'gone'")
        if word == LISTENING.encode():
            if self.listening is not None or self.cli_pid is not None:
                return self._refused("'listening' out of turn")
            count = self._number(rest)
            if count is None:
                return None  # the violation is said
            if count != self._fds:
                return self._refused("'listening' without its descriptors")
            self.listening = count
            self._fds = 0
        elif word == STARTED.encode():
            if self.cli_pid is not None or self.spawn_error is not None:
                return self._refused("'started' twice")
            self.cli_pid = self._number(rest)
        elif word == EXIT.encode():
            if self.cli_pid is None or self.wait_status is not None:
                return self._refused("'exit' out of turn")
            status = self._number(rest)
            if status is not None and status > MAX_WAIT_STATUS:
                return self._refused("a wait status out of range")
            self.wait_status = status
        elif word == SPAWN_ERROR.encode():
            if self.cli_pid is not None or self.spawn_error is not None:
                return self._refused("'spawn-error' out of turn")
            if not _TEXT.fullmatch(rest):
                return self._refused("a malformed 'spawn-error'")
            self.spawn_error = rest.decode("ascii")
        elif word in (LEFT.encode(), LEFT_UNLISTED.encode()) and self.cli_pid is None:
            return self._refused("'left' before 'started'")
        elif word == LEFT.encode():
            if len(self.left) >= LEFT_LISTED:
                return self._refused("more 'left' lines than the supervisor lists")
            if not _HEX.fullmatch(rest):
                return self._refused("a malformed 'left'")
            self.left.append(bytes.fromhex(rest.decode("ascii")))
        elif word == LEFT_UNLISTED.encode():
            count = self._number(rest)
            if count is not None:
                self.left_unlisted += count
        elif line == GONE.encode():
            self.said_gone = True
        else:
            return self._refused("an unknown line")
        return None if self.violation is not None else word.decode("ascii")

    def _number(self, text: bytes) -> int | None:
        if not _NUMBER.fullmatch(text):
            self._violated("a malformed number")
            return None
        return int(text)

    def _violated(self, why: str) -> None:
        self.violation = why

    def _refused(self, why: str) -> str | None:
        """Take note of a violation; the line yields no word."""
        self.violation = why
        return None
