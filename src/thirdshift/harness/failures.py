"""What kind of failure a session's stream (or its CLI's stderr) shows, as a value.

The readers collect what a stream said; the functions here decide, from that alone, which
:class:`~thirdshift.errors.SessionFailed` subclass a failed session raises and when it may be
tried again. They are pure: the current time is a parameter, so that a local time without a
date ("try again at 5:12 AM") resolves the same way in a test as in a run.

What each CLI says, as observed on Claude Code 2.1.197 and Codex 0.171.0 (the captures in
``tests/transcripts``):

- Claude ends a failed API call with a synthetic ``assistant`` line carrying ``error`` (``
  "rate_limit"``, ``"authentication_failed"``, ``"server_error"``) and a ``result`` with
  ``is_error: true`` and ``api_error_status`` (``null`` for repeated 529s); each retry before
  gave a ``system``/``api_retry`` with ``error_status``. On a subscription (an OAuth login)
  Claude marks *every* 429 with a ``rate_limit_event`` ``status: "rejected"``: a plan limit's
  carries ``resetsAt`` (epoch seconds) and its text says so ("You've hit your session limit ·
  resets 5:12am (UTC)"); any other 429's has no ``resetsAt`` and its text says "Server is
  temporarily limiting requests (not your usage limit)", a ``RateLimited``. So the event alone
  tells nothing apart: the reset time and the wording do. A Resume of an unknown id:
  ``errors: ["No conversation found with session ID: …"]``.
- Codex gives only text: the ``turn.failed`` message (``exceeded retry limit, last status: 429
  Too Many Requests``, ``unexpected status 401 Unauthorized``, ``Selected model is at
  capacity``, ``You\u2019ve hit your usage limit … try again at 5:12 AM.``, with a curly
  apostrophe). A Resume of an unknown id prints nothing on stdout; its stderr says ``no rollout
  found for thread id``.

Neither CLI says when a 429 or an overload may be retried once its own retries gave up, so
``retry_at`` is ``None`` for those; only usage limits carry a time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Unpack
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from thirdshift.errors import (
    AuthFailed,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFacts,
    SessionFailed,
    TurnLimitReached,
    UsageLimitReached,
)
from thirdshift.harness.lines import cut, shorten


@dataclass(frozen=True)
class FailureInfo:
    """Which failure a session's stream shows: the class to raise, and when to try again."""

    kind: type[SessionFailed]
    retry_at: datetime | None = None
    """When the limit resets (``resets_at`` of a ``UsageLimitReached``); None if not said."""

    def exception(self, message: str, **facts: Unpack[SessionFacts]) -> SessionFailed:
        """The error to raise for this failure, with ``retry_at`` and the given facts."""
        facts["retry_at"] = self.retry_at
        return self.kind(message, **facts)


# Texts that name a failure in either CLI's output. Matched anywhere, case-insensitively.
_USAGE_LIMIT = re.compile(r"\bhit your (?:\w+ )?limit\b", re.IGNORECASE)  # session/usage/weekly
# Claude's texts for a plan's limits and credits: "hit your monthly spend limit", "reached your
# Fable 5 limit", "out of usage credits", "Your org is out of usage", "out of extra usage".
_CLAUDE_USAGE_LIMIT = re.compile(
    r"\b(?:hit|reached) your (?:[\w'-]+ ){0,4}limit\b|\bout of (?:extra )?usage\b"
    r"|\busage credit cap is reached\b",
    re.IGNORECASE,
)
# What Claude says of a 429 on a login that is not the plan's limit.
_NOT_USAGE_LIMIT = re.compile(r"\bnot your usage limit\b", re.IGNORECASE)
_RESUME_MISSING = re.compile(
    r"No conversation found with session ID"
    r"|no rollout found for thread id"
    r"|--resume requires a valid session ID"
    r"|Error: \S*Session not found"  # opencode (its stderr is coloured)
    r"|Error resuming session: (?:Invalid session identifier|No previous sessions found)"  # Gemini
    r"|No saved session found with (?:title|ID)",  # Qwen Code: an id that is no UUID, a UUID
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"\bstatus:? 40[13]\b|\b40[13] (?:Unauthorized|Forbidden)\b|\b(?:invalid|incorrect) API key\b"
    r"|\bauthentication_failed\b",
    re.IGNORECASE,
)
_RATE = re.compile(r"\bstatus:? 429\b|\bToo Many Requests\b|\(429\)|\brate limit\b", re.IGNORECASE)
_OVERLOADED = re.compile(
    r"\bstatus:? 5\d\d\b|\bAPI Error: 5\d\d\b|\boverloaded\b|\bat capacity\b|\bhigh demand\b"
    r"|\bserver_is_overloaded\b|\bService Unavailable\b|\bInternal Server Error\b",
    re.IGNORECASE,
)
# Codex's reset time: "5:12 AM" on the same day, "Dec 3rd, 2026 5:12 AM" on another.
_TRY_AGAIN_AT = re.compile(
    r"try again at (?:(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2})(?:st|nd|rd|th), (?P<year>\d{4}) )?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2}) ?(?P<half>AM|PM)",
    re.IGNORECASE,
)
# Claude's reset time in its limit text: "resets 5:12am (UTC)", "resets 5am (Europe/Berlin)".
_RESETS = re.compile(
    r"resets (?P<hour>\d{1,2})(?::(?P<minute>\d{2}))? ?(?P<half>am|pm)"
    r"(?: \((?P<zone>[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+){0,2})\))?",
    re.IGNORECASE,
)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

# The `error` codes Claude puts on a synthetic assistant line or an api_retry.
_CLAUDE_AUTH_CODES = frozenset({"authentication_failed"})
_CLAUDE_RATE_CODES = frozenset({"rate_limit"})
_CLAUDE_OVERLOAD_CODES = frozenset({"server_error", "overloaded"})


def by_text(text: str, now: datetime) -> FailureInfo | None:
    """The failure a CLI's error text names, if it names one; ``now`` resolves a reset time."""
    if _USAGE_LIMIT.search(text):
        return FailureInfo(UsageLimitReached, reset_time(text, now))
    if _RESUME_MISSING.search(text):
        return FailureInfo(ResumeTargetMissing)
    if _AUTH.search(text):
        return FailureInfo(AuthFailed)
    if _RATE.search(text):
        return FailureInfo(RateLimited)
    if _OVERLOADED.search(text):
        return FailureInfo(Overloaded)
    return None


def from_stderr(text: str | None) -> FailureInfo | None:
    """The failure a line of a CLI's stderr names, for a session whose stream named none.

    Only a Resume of a session the CLI cannot find is told apart this way: Codex reports it on
    stderr alone, with nothing on stdout. Other stderr text is too loose to go on.
    """
    if text and _RESUME_MISSING.search(text):
        return FailureInfo(ResumeTargetMissing)
    return None


def reset_time(text: str, now: datetime) -> datetime | None:
    """The reset time a limit text names, as the next such moment after ``now``.

    Codex writes a local time ("try again at 5:12 AM", or with a date when it is not today);
    Claude "resets 5:12am (UTC)". A time is taken in the zone the text names, else in
    ``now``'s; ``now`` must be timezone-aware.
    """
    found = _TRY_AGAIN_AT.search(text)
    zone = now.tzinfo
    if found is None:
        found = _RESETS.search(text)
        if found is None:
            return None
        zone = _zone(found["zone"]) or zone
    twelve_hour, minute = int(found["hour"]), int(found["minute"] or 0)
    if not 1 <= twelve_hour <= 12 or minute > 59:
        return None
    hour = twelve_hour % 12 + (12 if found["half"].lower() == "pm" else 0)
    groups = found.groupdict()
    if groups.get("year"):  # Codex names the date when it is not today
        month = groups["month"].lower()
        try:
            return datetime(
                int(groups["year"]),
                _MONTHS.index(month) + 1 if month in _MONTHS else 0,
                int(groups["day"]),
                hour,
                minute,
                tzinfo=zone,
            )
        except ValueError:
            return None
    local_now = now.astimezone(zone)
    moment = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return moment if moment > local_now else moment + timedelta(days=1)


def _zone(name: str | None) -> tzinfo | None:
    """The time zone Claude names ("UTC", "Europe/Berlin"); None for one not known here."""
    if name is None:
        return None
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, ZoneInfoNotFoundError):  # OSError: a name that is no file
        return None


def from_epoch(value: object) -> datetime | None:
    """Epoch seconds (Claude's ``resetsAt``) as a UTC datetime; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        if not math.isfinite(value):
            return None
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None


@dataclass(frozen=True)
class ClaudeTurnEnd:
    """What Claude's stream said about how its last turn ended, for :func:`claude_failure`."""

    subtype: str | None = None
    terminal_reason: str | None = None
    api_error_status: int | None = None
    texts: tuple[str, ...] = ()
    """The result's ``errors`` and ``result`` text."""
    error_code: str | None = None
    """The ``error`` of the turn's last synthetic assistant line, else of its last api_retry."""
    retry_status: int | None = None
    """The ``error_status`` of the turn's last ``api_retry``."""
    rejected: bool = False
    """Whether the latest ``rate_limit_event`` said ``status: "rejected"``."""
    resets_at: datetime | None = None


def claude_failure(turn: ClaudeTurnEnd, now: datetime) -> FailureInfo | None:
    """The failure a failed Claude turn shows; None for one no rule knows (a plain failure)."""
    text = "\n".join(turn.texts)
    if _is_usage_limit(turn, text):  # a limit's 429 is no mere rate limit
        return FailureInfo(UsageLimitReached, turn.resets_at or reset_time(text, now))
    if turn.subtype == "error_max_turns" or turn.terminal_reason == "max_turns":
        return FailureInfo(TurnLimitReached)
    if _RESUME_MISSING.search(text):
        return FailureInfo(ResumeTargetMissing)
    status = turn.api_error_status if turn.api_error_status is not None else turn.retry_status
    if status is not None:
        kind = _by_status(status)
        if kind is not None:
            return FailureInfo(kind)
    code = turn.error_code
    if code in _CLAUDE_AUTH_CODES:
        return FailureInfo(AuthFailed)
    if code in _CLAUDE_RATE_CODES:
        return FailureInfo(RateLimited)
    if code in _CLAUDE_OVERLOAD_CODES:
        return FailureInfo(Overloaded)
    if turn.rejected:  # a 429 on a login, by the event: no reset time, no limit's wording
        return FailureInfo(RateLimited)
    return by_text(text, now)


def _is_usage_limit(turn: ClaudeTurnEnd, text: str) -> bool:
    """Whether a failed Claude turn hit the plan's limit, not a mere 429: by the wording, or by
    a rejected ``rate_limit_event`` that says when the limit resets.

    Claude marks every 429 of a login rejected, so the event alone does not tell; and its text
    "not your usage limit" outweighs whatever the event carries.
    """
    if _NOT_USAGE_LIMIT.search(text):
        return False
    if _CLAUDE_USAGE_LIMIT.search(text):
        return True
    return turn.rejected and turn.resets_at is not None


def _by_status(status: int) -> type[SessionFailed] | None:
    if status in (401, 403):
        return AuthFailed
    if status == 429:
        return RateLimited
    if 500 <= status <= 599:
        return Overloaded
    return None


def codex_failure(message: str, now: datetime) -> FailureInfo | None:
    """The failure a Codex ``turn.failed`` message names; None for one no rule knows."""
    return by_text(message, now)


class ClaudeSigns:
    """Collects, event by event, what :func:`claude_failure` needs from a Claude stream.

    The facts of a turn (its retries, its synthetic error line) are kept until the next
    top-level ``result`` closes the turn; then they and the result make one
    :class:`ClaudeTurnEnd`. Limit events count from the latest one, across turns.
    """

    def __init__(self) -> None:
        self._error_code: str | None = None
        self._retry_error: str | None = None
        self._retry_status: int | None = None
        self._rejected = False
        self._resets_at: datetime | None = None
        self._warned = False
        self.last_turn: ClaudeTurnEnd | None = None

    def see(self, event: dict[str, Any]) -> list[str]:
        """Take in one event; return the progress line a quota warning gives (only the first)."""
        kind = event.get("type")
        if event.get("parent_tool_use_id") is not None:
            return []  # a subagent's, not the session's
        if kind == "rate_limit_event":
            return self._rate_limit(event.get("rate_limit_info"))
        if kind == "system" and event.get("subtype") == "api_retry":
            status = event.get("error_status")
            self._retry_status = _status(status)
            error = event.get("error")
            self._retry_error = shorten(error) if isinstance(error, str) else None
        elif kind == "assistant":
            error = event.get("error")
            if isinstance(error, str):
                self._error_code = shorten(error)
        elif kind == "result":
            self._close_turn(event)
        return []

    def _rate_limit(self, info: object) -> list[str]:
        if not isinstance(info, dict):
            return []
        status = info.get("status")
        if status == "rejected":
            self._rejected = True
            self._resets_at = from_epoch(info.get("resetsAt"))
        elif isinstance(status, str):
            self._rejected = False
            self._resets_at = None
            if status == "allowed_warning" and not self._warned:
                self._warned = True
                return [warning_line(info)]
        return []

    def _close_turn(self, result: dict[str, Any]) -> None:
        texts: list[str] = []
        errors = result.get("errors")
        if isinstance(errors, list):
            texts += [error for error in errors if isinstance(error, str)]
        text = result.get("result")
        if isinstance(text, str):
            texts.append(text)
        subtype, reason = result.get("subtype"), result.get("terminal_reason")
        self.last_turn = ClaudeTurnEnd(
            subtype=subtype if isinstance(subtype, str) else None,
            terminal_reason=reason if isinstance(reason, str) else None,
            api_error_status=_status(result.get("api_error_status")),
            texts=(cut("\n".join(texts)),) if texts else (),  # bounded, as the reader's error
            error_code=self._error_code if self._error_code is not None else self._retry_error,
            retry_status=self._retry_status,
            rejected=self._rejected,
            resets_at=self._resets_at,
        )
        self._error_code = self._retry_error = self._retry_status = None


def _status(value: object) -> int | None:
    """An HTTP status from the stream; None for anything that is not one."""
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return value
    return None


def warning_line(info: dict[str, Any]) -> str:
    """The one progress line for Claude's quota warning (``status: "allowed_warning"``).

    ``usage warning: 92% of the five-hour limit used, resets at 05:12 UTC``, with whichever
    parts the event gives (the time in UTC, which reads the same on every machine).
    """
    which = info.get("rateLimitType")
    limit = (
        shorten(which.replace("_", "-")) + " limit" if isinstance(which, str) and which else "limit"
    )
    used = info.get("utilization")
    if isinstance(used, int | float) and not isinstance(used, bool) and 0 <= used <= 10:
        line = f"usage warning: {round(used * 100)}% of the {limit} used"
    else:
        line = f"usage warning: nearing the {limit}"
    resets = from_epoch(info.get("resetsAt"))
    if resets is not None:
        line += f", resets at {resets.strftime('%H:%M')} UTC"
    return line
