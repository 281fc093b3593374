"""Where a text holds a secret: :func:`redacted` replaces each, :func:`safe_cut` never splits one.

A command run with a token in it should not put the token in CI logs, so what thirdshift shows
of a stream (see :mod:`thirdshift._shown`) has the common secret shapes replaced with
``[redacted]``: a password, token, secret or API key given to a variable, a flag, a JSON or
YAML key or a header (``DB_PASSWORD=…``, ``--password …``, ``"password": "…"``,
``X-Api-Key: …``); ``Authorization`` and bearer tokens; the password of a URL
(``https://user:…@host``) and of ``curl -u user:…``; the keys that announce themselves (``sk-``,
``ghp_``, ``github_pat_``, ``glpat-``, ``AKIA``, ``AIza``, ``xoxb-``, ``npm_``, a JWT) and private
key blocks. What stands before the secret (the name, ``ghp_``) is kept, so that a reader still
sees what was there. It is a safety net for logs, not a guarantee: a secret of a shape not
listed here is shown as it is.

Shortening is where a secret used to get through: cut first, a token kept too few of its
characters to be told from any other word. So a text is cut only where no secret is split
(:func:`safe_cut`): a secret the cut would fall inside is left out whole, and what is kept is
redacted as a whole text would be. Every shape is told from what follows its start within
:data:`DECIDED_WITHIN` characters, so the cut looks that far past it and no further: a 4 MiB
command costs what a short one does.

Speed, measured on 4 MB of words (Python 3.11): a pattern that begins with a literal is found at
about 0.5 ns a character, one that begins with ``\\b``, a character class or ``(?i)`` at 9-15 ns.
So each shape is its own pattern beginning with a literal (a boundary is checked by a
lookbehind after it), and the case-insensitive ones are matched in the lower-cased text: 25
shapes over 4 MB take about 60 ms where the first 8, written plainly, took 500 ms.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator

REDACTED = "[redacted]"

DECIDED_WITHIN = 600
"""Whether a secret starts at a place is told by at most this many characters from there (the
longest: a URL's user and password, up to 256 characters each); what follows only says where
it ends."""

# How a word goes on once started: a quoted part belongs to it (`pw="two words"` is one word).
_WORD_GOES_ON = r"(?:[^\s&;,\"']|\"[^\"\n]*\"?|'[^'\n]*'?)*"
# A value after `=` or `:`: inside its quotes (to the closing one, or the line's end when a cut
# took it), or one unquoted word, up to what ends a value in a query string or shell line.
_VALUE = (
    r"[\"']?(?P<secret>(?<=\")(?:[^\"\\\n]|\\.)*|(?<=')[^'\n]*|[^\s&;,\"']"
    + _WORD_GOES_ON
    + r")[\"']?"
)
# A flag's value, the next word: one starting with `-` is the next flag.
_FLAG_VALUE = (
    r"[\"']?(?P<secret>(?<=\")[^\"\n]*|(?<=')[^'\n]*|[^\s&;,\"'-]" + _WORD_GOES_ON + r")[\"']?"
)
# What makes a name a secret's, and how it may go on (`DB_PASSWORD_FILE`, not `PASSENGER`).
_NAMES = (
    "password",
    "passwd",
    "passphrase",
    "pass(?<![a-z]pass)",
    "secret",
    "token",
    "api[_-]?key",
    "_key",
    "_pwd",
    "auth(?<![a-z]auth)",
)
_NAME_GOES_ON = r"(?:[_-][a-z0-9_-]{0,40})?[\"']?[ \t]{0,8}(?:=>|:=|[=:])[ \t]{0,8}"
_FLAG_NAMES = "password|passwd|passphrase|pass|secret|token|api-?key|access-?key|private-?key"


# A pattern's first special character: what stands before it, every match starts with (no
# pattern here has a `?` or `*` right after its leading characters).
_SPECIAL = re.compile(r"[\\.^$*+?{}\[\]|()]")


def _with_literal(*patterns: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each pattern compiled, with the characters every match of it starts with."""
    return tuple((_SPECIAL.split(pattern, 1)[0], re.compile(pattern)) for pattern in patterns)


# Matched in the lower-cased text, so written in lower case.
_FOLDED = _with_literal(
    *(name + _NAME_GOES_ON + _VALUE for name in _NAMES),
    rf"--(?:[a-z0-9]{{1,20}}-){{0,4}}(?:{_FLAG_NAMES})(?:-[a-z0-9]{{1,20}}){{0,4}}[ \t]{{1,8}}"
    + _FLAG_VALUE,
    r"authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?"
    # A header's value runs to the line's end (or the quote around the header).
    r"(?:(?:bearer|basic|token|digest|negotiate|bot)[ \t]{1,8})?(?P<secret>[^'\"\n]+)",
    r"bearer(?<![a-z0-9]bearer)[ \t]{1,8}(?P<secret>[a-z0-9._~+/=-]{8,})",
)
# Matched in the text as it is. A lookbehind after the literal stands in for a `\b` before it.
_CASED = _with_literal(
    r"sk-(?<![A-Za-z0-9_]sk-)(?P<secret>[A-Za-z0-9_-]{16,})",
    r"k_live_(?<=[rs]k_live_)(?<![A-Za-z0-9_][rs]k_live_)(?P<secret>[A-Za-z0-9]{16,})",
    r"k_test_(?<=[rs]k_test_)(?<![A-Za-z0-9_][rs]k_test_)(?P<secret>[A-Za-z0-9]{16,})",
    r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)(?P<secret>[A-Za-z0-9]{20,})",
    r"github_pat_(?<![A-Za-z0-9_]github_pat_)(?P<secret>[A-Za-z0-9_]{20,})",
    r"glpat-(?P<secret>[A-Za-z0-9_-]{20,})",
    r"A[KS]IA(?<![A-Za-z0-9_]A[KS]IA)(?P<secret>[0-9A-Z]{16})\b",
    r"AIza(?<![A-Za-z0-9_]AIza)(?P<secret>[0-9A-Za-z_-]{30,})",
    r"xox[abposr]-(?<![A-Za-z0-9_]xox[abposr]-)(?P<secret>[A-Za-z0-9-]{8,})",
    r"npm_(?<![A-Za-z0-9]npm_)(?P<secret>[A-Za-z0-9]{30,})",
    r"eyJ(?<![A-Za-z0-9_-]eyJ)(?P<secret>[A-Za-z0-9_-]{5,256}\.[A-Za-z0-9_-]{2,}[A-Za-z0-9_.-]*)",
    r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?P<secret>[A-Za-z0-9+/=\s\\]+)",
    # The password of a URL: only the `@` after it tells it from a port.
    r"://[^\s/?#:@'\"]{0,256}:(?P<secret>[^\s/?#@'\"]{1,256})@",
    # curl's `-u user:password` (and `-U`, `--user`, `--proxy-user`).
    r"-[uU](?<![^\s'\"]-[uU])[ \t]{0,8}[\"']?[^\s:'\"]{1,256}:(?P<secret>[^\s'\"]+)",
    r"--(?:proxy-)?user(?:[ \t]{1,8}|=)[\"']?[^\s:'\"]{1,256}:(?P<secret>[^\s'\"]+)",
)


def _lower(text: str) -> str:
    """``text`` in lower case, each character where it was."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return text.replace("\u0130", "i").lower()  # "İ" is the one that lower-cases to two


def _found(text: str, end: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """``(match start, start, end, match end)`` of each secret in ``text[:end]``: where what
    told it apart starts (``DB_PASSWORD=``, ``--token``), the secret, then the end of what told
    it apart (an ``@`` after a URL's password, a closing quote)."""
    cased = text if end is None else text[:end]
    for patterns, within in ((_FOLDED, _lower(cased)), (_CASED, cased)):
        for literal, pattern in patterns:
            if literal not in within:
                continue  # most shapes, in most lines: decided at a fraction of a search's cost
            for match in pattern.finditer(within):
                start, stop = match.span("secret")
                yield match.start(), start, stop, match.end()


def redacted(text: str) -> str:
    """``text`` with every secret of the shapes above replaced by :data:`REDACTED`."""
    kept: list[tuple[int, int]] = []
    pending: list[tuple[int, int]] = []  # kept secrets not yet begun where a match is told
    reach = 0  # the furthest end of the kept secrets begun by then
    for told_at, start, stop, _ in sorted(_found(text)):
        while pending and pending[0][0] <= told_at:
            reach = max(reach, heapq.heappop(pending)[1])
        # What tells a secret apart, found inside another secret, is part of that secret (a
        # password `--apikey-0` is no flag whose value the next word would be). Matches come
        # in the order they are told, and each secret starts where or after it is told, so one
        # pass over a heap of those not yet begun decides it.
        if stop <= start or told_at < reach:
            continue
        kept.append((start, stop))
        heapq.heappush(pending, (start, stop))
    merged: list[list[int]] = []  # the secrets' spans, those that overlap or touch made one
    for start, stop in sorted(kept):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    parts: list[str] = []
    kept_from = 0
    for start, stop in merged:
        parts += (text[kept_from:start], REDACTED)
        kept_from = stop
    parts.append(text[kept_from:])
    return "".join(parts)


def safe_cut(text: str, limit: int) -> int:
    """Where to cut ``text`` to keep at most ``limit`` characters and no part of a secret.

    ``limit`` (or the whole text, if it is shorter), unless that falls inside a secret, or
    between a secret and what tells it apart; then the start of that secret, so that what
    stands before it (``ghp_``, ``DB_PASSWORD=``) is kept, and the rest is left out whole.
    """
    if len(text) <= limit:
        return len(text)
    found = [(start, match_end) for _, start, _, match_end in _found(text, limit + DECIDED_WITHIN)]
    cut = limit
    while True:
        inside = [start for start, match_end in found if start < cut < match_end]
        if not inside:
            return cut
        cut = min(inside)
