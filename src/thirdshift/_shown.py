"""How text that came from a stream or a worktree is shown to a person: :func:`shown`.

Everything a session's agent prints is hostile input here. Written raw to a terminal, a control
character can clear the screen, set the window title or write the clipboard (OSC 52); a newline
can forge a ``thirdshift: …`` line of its own; a bidi control can make a line read differently
from what it holds. And a command that was run with a token in it should not put the token in
CI logs. So every place thirdshift writes such text for a person (progress lines, ``inspect``,
error messages, the final message on a terminal) goes through this one function, which has the
secrets found by :mod:`thirdshift._redaction` replaced. Text shortened before it gets here is
cut only where no secret is split (:func:`thirdshift._redaction.safe_cut`), so none is shown in
part. The Session log is never touched: it keeps every byte, and it is readable by its owner
only.
"""

from __future__ import annotations

import re
from typing import Literal

from thirdshift._redaction import REDACTED, redacted

__all__ = ["REDACTED", "Form", "redacted", "shown"]

Form = Literal["line", "message", "output"]

_BIDI = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
_ESCAPED: dict[int, str] = {
    code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
} | {code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *_BIDI)}
_ESCAPED_BUT_NEWLINES = {code: escape for code, escape in _ESCAPED.items() if code != 0x0A}
_CONTINUATION = re.compile(r"\n(?=[^ \t\n])")


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
