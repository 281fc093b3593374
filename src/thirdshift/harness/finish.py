"""The optional last step of reading a stream: telling the reader how the CLI exited.

A :class:`~thirdshift.harness.StreamReader` sees only the stream, and for most CLIs that is
enough. Some streams cannot tell an interrupted turn from a finished one: Gemini CLI exits 0 on
SIGINT and SIGTERM, printing nothing more, so its stream then simply lacks its ``result``. A
reader that wants the exit code to say what happened has a ``finish(exit_code)`` method; whoever
runs the CLI calls :func:`finish_reading` once the stream has ended and the CLI has exited, and
before it asks the reader anything else. Readers without one are left as they are, so every
existing reader (and any plugin's) keeps working unchanged.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Finishes(Protocol):
    """A reader that takes the CLI's exit code once the stream has ended."""

    def finish(self, exit_code: int | None) -> None:
        """Take the CLI's exit code: ``None`` when it died by a signal or its status is lost."""
        ...


def finish_reading(reader: object, exit_code: int | None) -> None:
    """Hand ``exit_code`` to ``reader`` if it takes one. Never raises, as ``feed`` never does."""
    if isinstance(reader, Finishes):
        try:
            reader.finish(exit_code)
        except Exception:
            pass  # a reader's slip must not turn into a session's traceback
