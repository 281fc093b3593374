"""The last step of reading a stream: telling the reader how the CLI exited.

A :class:`~thirdshift.harness.StreamReader` sees only the stream, and for most CLIs that is
enough. Some streams cannot tell an interrupted turn from a finished one: Gemini CLI exits 0 on
SIGINT and SIGTERM, printing nothing more, so its stream then simply lacks its ``result``. Every
reader has ``finish(exit_code)`` (by default it changes nothing); whoever runs the CLI calls
:func:`finish_reading` once the stream has ended and the CLI has exited, and before it asks the
reader anything else.
"""

from __future__ import annotations

from thirdshift.harness._base import StreamReader


def finish_reading(reader: StreamReader, exit_code: int | None) -> None:
    """Hand ``exit_code`` to ``reader``. Never raises, as ``feed`` never does."""
    try:
        reader.finish(exit_code)
    except Exception:
        pass  # a reader's slip must not turn into a session's traceback
