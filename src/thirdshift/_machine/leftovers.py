"""Work the session left running, as the supervisor saw it, merged into the session's ending.

opencode, Gemini CLI and Qwen Code never say in their streams that background work was killed
as they exited: opencode's and Gemini's outlive the CLI. So a process still running once the
CLI has exited and the drain is over, which the supervisor then stops, is background work killed
as the session ended (:mod:`thirdshift._machine.supervisor` reports each one's command line).
What the stream already reported is not counted twice, and neither is a helper process the
Harness declares as its own (``helper_processes``: ``fnmatch`` patterns matched against the
command line, its argv joined by spaces).

A command line is hostile input: it is shown escaped (:func:`thirdshift._shown.shown`), on one
line, and shortened as the readers shorten the work they describe.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence

from thirdshift._shown import shown
from thirdshift.harness._lines import MAX_KILLED, MAX_KILLED_LISTED, listed, shorten

_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_SHELL_FLAGS = frozenset({"-c", "-lc"})


def described(argv: Sequence[str], unwrap: Callable[[str], str] | None = None) -> str:
    """How a left-over process is named: its command line, or the script of ``sh -c SCRIPT``.

    Agents start background work through a shell (``bash -c 'npm run dev'``); people want to
    read ``npm run dev``, as the readers show Codex's commands. ``unwrap`` is the Harness's
    ``unwrap_command``, for a CLI that wraps each command in a script of its own.
    """
    if len(argv) >= 3 and argv[0].rpartition("/")[2] in _SHELLS and argv[1] in _SHELL_FLAGS:
        text = _subshell_body(argv[2] if unwrap is None else unwrap(argv[2]))
    else:
        text = " ".join(argv)
    return shorten(shown(text), MAX_KILLED)


# `(CMD) </dev/null >/dev/null 2>&1`: the usual way to start work that outlives its shell. A
# shell runs such a group in a child of its own, so the shell left over shows this script.
_SUBSHELL_WITH_REDIRECTIONS = re.compile(
    r"\(\s*(?P<body>[^()]*?)\s*\)(?:\s*[0-9]*(?:<|>|>>|>&|<&)\s*[^\s&|;()]+)*\s*&?\s*"
)


def _subshell_body(script: str) -> str:
    """``CMD`` of ``(CMD) <redirections>`` (a single group, nothing else); else ``script``."""
    match = _SUBSHELL_WITH_REDIRECTIONS.fullmatch(script)
    return match["body"] if match and match["body"] else script


def is_helper(argv: Sequence[str], patterns: Iterable[str]) -> bool:
    """Whether the process is one the Harness declares as its CLI's own, not work."""
    command = " ".join(argv)
    return any(fnmatch.fnmatchcase(command, pattern) for pattern in patterns)


def merged(
    stream_killed: Sequence[str],
    found: Iterable[str],
    *,
    unlisted: int = 0,
) -> tuple[str, ...]:
    """The stream's killed work, then each ``found`` description it does not name already.

    A found description is the stream's when one holds the other (the stream may name a
    command with its shell, or the other way round): each piece of work is named once. The
    list is capped as the readers cap theirs, ``unlisted`` more counted in ``and N more``.
    """
    if len(stream_killed) >= MAX_KILLED_LISTED:
        return tuple(stream_killed)  # full already: its last entry says how many more
    entries = list(stream_killed)
    for description in found:
        if not any(_same_work(description, known) for known in stream_killed):
            entries.append(description)
    if unlisted and len(entries) < MAX_KILLED_LISTED:
        # Processes that could not be read: still work the session left, so still said.
        return (*entries, f"and {unlisted} more" if entries else f"{unlisted} processes")
    return listed(entries, unlisted)


def _same_work(one: str, other: str) -> bool:
    return one == other or (bool(one) and bool(other) and (one in other or other in one))
