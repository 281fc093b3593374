"""How text that came from a stream or a worktree is shown to a person: :func:`shown`.

Everything a session's agent prints is hostile input here. Written raw to a terminal, a control
character can clear the screen, set the window title or write the clipboard (OSC 52); a newline
can forge a ``thirdshift: …`` line of its own; a bidi control can make a line read differently
from what it holds. And a command that was run with a token in it should not put the token in
CI logs. So every place thirdshift writes such text for a person (progress lines, ``inspect``,
error messages, the final message on a terminal) goes through this one function. The Session
log is never touched: it keeps every byte, and it is readable by its owner only.
"""

from __future__ import annotations

import re
from typing import Literal

Form = Literal["line", "message", "output"]

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_ESCAPED: dict[int, str] = {
    code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
} | {code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *_BIDI)}
_ESCAPED_BUT_NEWLINES = {code: escape for code, escape in _ESCAPED.items() if code != 0x0A}

REDACTED = "[redacted]"
# Each keeps the part before the secret (group 1), so that a reader still sees what was there.
_SECRETS = tuple(
    re.compile(pattern)
    for pattern in (
        r"(?i)(\bauthorization\s*:\s*(?:bearer|basic|token)\s+)[^\s'\"]+",
        r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}",
        r"(\bsk-)[A-Za-z0-9_-]{16,}",
        r"(\bgh[pousr]_)[A-Za-z0-9]{20,}",
        r"(\bgithub_pat_)[A-Za-z0-9_]{20,}",
        r"(\b(?:AKIA|ASIA))[0-9A-Z]{16}\b",
        r"(\bxox[abposr]-)[A-Za-z0-9-]{8,}",
        r"(?i)(\bpass(?:word|wd)\s*[=:]\s*)(?:\"[^\"]*\"|'[^']*'|[^\s&;,]+)",
    )
)
_CONTINUATION = re.compile(r"\n(?=[^ \t\n])")


def redacted(text: str) -> str:
    """``text`` with the common secret shapes (bearer tokens, API keys, passwords) replaced."""
    for secret in _SECRETS:
        text = secret.sub(rf"\g<1>{REDACTED}", text)
    return text


def shown(text: str, form: Form = "line") -> str:
    """``text`` made safe to write for a person, in one of three forms.

    - ``"line"`` (a progress line): secrets redacted; every control character, line and
      paragraph separator and bidi control written as an escape (``\\x1b``, ``\\u202e``), so
      the text stays on one line and reads as it is.
    - ``"message"`` (an error message): the same, but newlines kept, and every continuation
      line indented two spaces, so that none can pass for a line of thirdshift's own.
      Applying it twice changes nothing more.
    - ``"output"`` (the final message, written to a terminal): newlines kept and nothing
      redacted or indented, since it is the product; everything else escaped as above.
    """
    if form == "line":
        return redacted(text).translate(_ESCAPED)
    if form == "message":
        return _CONTINUATION.sub("\n  ", redacted(text).translate(_ESCAPED_BUT_NEWLINES))
    return text.translate(_ESCAPED_BUT_NEWLINES)
