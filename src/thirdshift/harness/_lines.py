"""Condensing shared by the stream readers: bash lines, shortening, relative paths, unwrapping.

Everything here is a pure function of strings, linear in its input: a reader may hand it a
command or path of any size straight out of a stream. Only the two that shorten look for
secrets (never splitting one: :func:`thirdshift._redaction.safe_cut`), and only as far past the
cut as that takes; the rest is free of regular expressions. :func:`loads` is the readers'
``json.loads``, with less overhead for each of a stream's lines.
"""

from __future__ import annotations

import json
from typing import Any

from thirdshift._redaction import safe_cut

MAX_DETAIL = 100
"""A detail longer than this many characters keeps that many and gains an ellipsis."""

ELLIPSIS = "…"

MAX_KILLED = 500
"""Killed work is described from the stream, and named in the Resume prompt and in errors: a
description longer than this keeps that many characters and gains an ellipsis (a real one is a
command or a short sentence; a hostile stream must not make every later message megabytes)."""

MAX_KILLED_LISTED = 20
"""The longest killed-work list a reader gives: past it, the last entry is ``and N more``."""

MAX_TRACKED = 1000
"""How many tasks or items a reader follows at once (their descriptions, whether they run).

A real session has a handful; a hostile stream may announce millions, and each one kept would
stay in the orchestrator's memory for the session's life. Past this many, the oldest is
forgotten (or, for running work, new work goes uncounted)."""

MAX_ID = 256
"""A task or item id is kept to this many characters (real ones are a few dozen)."""

MAX_MESSAGE = 1 << 20
"""A final message or error text longer than this many characters is cut, with a note."""

_SHELLS = frozenset({"bash", "sh", "zsh"})
_SHELL_FLAGS = frozenset({"-c", "-lc"})

# Every separator a bash line splits a command on, mapped to one of them so that one
# `str.split` does the work (no regex, one pass).
_SEPARATORS = str.maketrans({";": "\n", "&": "\n", "|": "\n"})

_JSON_SPACE = " \t\n\r"  # what JSON allows around a value
_raw_decode = json.JSONDecoder().raw_decode


def loads(line: str) -> Any:
    """``json.loads(line)``, at a fraction of its cost per call on short lines.

    The same value, and a ``ValueError`` wherever ``json.loads`` raises one (the message may
    differ): whitespace is skipped as ``json.loads`` skips it, then the one scan that
    ``json.loads`` also runs parses the value, and anything but whitespace after it is an
    error. What is saved is ``json.loads``'s own layers of Python calls and regular-expression
    matches around that scan, which cost as much as the scan itself on a line of 100 bytes.
    """
    start = len(line) - len(line.lstrip(_JSON_SPACE))
    value, end = _raw_decode(line, start)
    if end != len(line) and line[end:].strip(_JSON_SPACE):
        raise ValueError(f"extra data after the JSON value, at character {end}")
    return value


def shorten(text: str, limit: int = MAX_DETAIL) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` and ``…``.

    Fewer, where the cut would split a secret: then it falls before the secret, which a cut
    would otherwise leave too short to be told from a word, and so shown.
    """
    if len(text) <= limit:
        return text
    return text[: safe_cut(text, limit)] + ELLIPSIS


def cut(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text``, or its first ``limit`` characters and a note of how much more the log has.

    Fewer, where the cut would split a secret (as :func:`shorten`).
    """
    if len(text) <= limit:
        return text
    kept = safe_cut(text, limit)
    return f"{text[:kept]}{ELLIPSIS} (cut: {len(text) - kept} more characters in the Session log)"


def listed(entries: list[str], more: int = 0) -> tuple[str, ...]:
    """``entries`` (and ``more`` not kept) as at most :data:`MAX_KILLED_LISTED` entries.

    Past the cap, the last entry is ``and N more``.
    """
    total = len(entries) + more
    if total <= MAX_KILLED_LISTED:
        return tuple(entries)
    shown = entries[: MAX_KILLED_LISTED - 1]
    return (*shown, f"and {total - len(shown)} more")


def first_line(text: str) -> str:
    """The first line of ``text`` (surrounding blank lines and a trailing ``\\r`` dropped).

    Leading blank lines are skipped because agents often start a multi-line script with a
    newline, and an empty progress line would say nothing.
    """
    line = text.strip().partition("\n")[0]
    return line.rstrip("\r")


def git_action(command: str) -> str | None:
    """``commit``, ``push`` or ``commit and push`` if the command runs them, else None.

    The command is split on newlines, ``;``, ``&`` and ``|``; a part counts when its first two
    words are ``git commit`` or ``git push``. Quoting is deliberately not parsed, so that
    ``grep 'git push' README.md`` is not a push (its first two words are ``grep 'git``).
    """
    if "git" not in command:  # the common case, decided without splitting anything
        return None
    commit = push = False
    for part in command.translate(_SEPARATORS).split("\n"):
        words = part.split(None, 2)
        if len(words) >= 2 and words[0] == "git":
            commit = commit or words[1] == "commit"
            push = push or words[1] == "push"
    if commit and push:
        return "commit and push"
    if commit:
        return "commit"
    if push:
        return "push"
    return None


def bash_line(command: str) -> str:
    """The progress line of a shell command: a git action, or ``$ <first line, shortened>``."""
    action = git_action(command)
    if action is not None:
        return action
    return "$ " + shorten(first_line(command))


def relative(path: str, base: str | None) -> str:
    """``path`` relative to ``base`` when it starts with ``base + "/"``, else unchanged.

    Pure string work, on purpose: the stream names paths as the CLI saw them, which need not
    exist (or resolve the same way) where the reader runs.
    """
    if base:
        prefix = base + "/"
        if path.startswith(prefix) and len(path) > len(prefix):
            return path[len(prefix) :]
    return path


def _is_shell(word: str) -> bool:
    return word.rpartition("/")[2] in _SHELLS


def unwrap_command(command: str) -> str:
    """The script inside ``<shell> -c|-lc <script>``, unquoted; any other command unchanged.

    Codex reports each command as the argv it ran, joined and quoted, e.g.
    ``/bin/bash -lc 'sleep 300'``; people want to read ``sleep 300``. The shell is ``bash``,
    ``sh`` or ``zsh``, or a path ending in one of them. A single-quoted script has each
    ``'\\''`` turned back into ``'``; a double-quoted one each ``\\"`` into ``"``. An unquoted
    script must be one word, or the command is not three words and stays as it is.
    """
    words = command.split(" ", 2)
    if len(words) != 3:
        return command
    shell, flag, script = words
    if flag not in _SHELL_FLAGS or not _is_shell(shell):
        return command
    if len(script) >= 2 and script[0] == script[-1] == "'":
        return script[1:-1].replace("'\\''", "'")
    if len(script) >= 2 and script[0] == script[-1] == '"':
        return script[1:-1].replace('\\"', '"')
    if script and " " not in script:
        return script
    return command
