"""The placeholders of a recording, and the values a fake plays in their place.

The recorder (``conformance/_recording.py``) writes a placeholder where a value is the play's,
not the CLI's (a time, a duration, a cost, an id). A number's placeholder names its JSON type
(``"<ms:int>"``, ``"<usd:float>"``), so that what is put back is what the real CLI printed
there: Claude's ``retry_delay_ms`` is a float where its other durations are ints, and
opencode's times are epoch milliseconds where the others' are ISO texts.

The fakes replay recorded lines: :func:`played` puts a value of that type back, and the fake
then fills in what its play decides (ids, texts, counts). Stdlib only: every fake CLI call
imports it.
"""

from __future__ import annotations

import re
from typing import Any

UUID = "<uuid>"
TIME = "<time>"
MILLISECONDS = "<ms>"
USD = "<usd>"
PID = "<pid>"
FOLDER = "<folder>"
FOLDER_AS_NAME = "<folder-as-name>"
PORT = "<port>"
UID = "<uid>"
SHELL = "<shell>"
_KEPT = (UUID, TIME, MILLISECONDS, USD, PID, FOLDER, FOLDER_AS_NAME, PORT, UID, SHELL)

_TYPED = re.compile(r"<([a-z]+):(int|float)>")
_NUMBERED = re.compile(r"<([a-z]+)-(\d+)>")
# What a fake's stream shows of a placeholder it did not fill: the placeholder (one kept as it
# was recorded), or what played() put back for a numbered one.
_UNFILLED = re.compile(
    f"<(?:{'|'.join(re.escape(kept[1:-1]) for kept in _KEPT)})(?::int|:float)?>"
    r"|\bplayed-[a-z]+-\d+\b"
)
_PLAYED_TEXT = {UUID: "00000000-0000-4000-8000-000000000000", TIME: "2026-01-01T00:00:00.000Z"}
_PLAYED_EPOCH = 1767225600  # 2026-01-01T00:00:00Z, for a time recorded as a number


def hidden(placeholder: str, value: Any) -> Any:
    """What the recorder writes for ``value``, the play's own: ``placeholder``, typed if
    ``value`` is a number (None, which no play varies, stays)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return f"{placeholder[:-1]}:{type(value).__name__}>"
    return placeholder


def played(value: Any) -> Any:
    """``value``, a recorded event or a part of one, with a value for each placeholder."""
    if isinstance(value, dict):
        return {name: played(item) for name, item in value.items()}
    if isinstance(value, list):
        return [played(item) for item in value]
    if not isinstance(value, str) or "<" not in value:
        return value
    typed = _TYPED.fullmatch(value)
    if typed:
        if f"<{typed[1]}>" != TIME:
            return 0.0 if typed[2] == "float" else 0
        # Epoch times: whole milliseconds (opencode's), or seconds with a fraction.
        return float(_PLAYED_EPOCH) if typed[2] == "float" else _PLAYED_EPOCH * 1000
    if value in _PLAYED_TEXT:
        return _PLAYED_TEXT[value]
    return _NUMBERED.sub(lambda found: f"played-{found[1]}-{found[2]}", value)


def unfilled(text: str) -> list[str]:
    """The placeholders a fake's stream ``text`` shows as recorded: none, if the fake filled
    in every value its play decides."""
    return _UNFILLED.findall(text)
