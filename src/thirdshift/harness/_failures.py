"""What kind of failure a session's stream (or its CLI's stderr) shows, as a value.

The readers collect what a stream said; the functions here decide, from that alone, which
:class:`~thirdshift.errors.SessionFailed` subclass a failed session raises and when it may be
tried again. They are pure: the current time is a parameter, so that a local time without a
date ("try again at 5:12 AM") resolves the same way in a test as in a run.

The rules here are the CLIs' common ground: HTTP statuses, "hit your … limit", "try again at
5:12 AM" or "resets 5:12am (UTC)". What one CLI alone says lives in its Harness module: Claude's
signs and wording in :mod:`thirdshift.harness._builtin.claude_signs`, and each CLI's wording for
a Resume of a session it cannot find as its module's ``RESUME_MISSING``, which its reader hands
to :func:`by_text` and its Harness's ``stderr_failure`` to :func:`resume_missing_in`.

No CLI says when a 429 or an overload may be retried once its own retries gave up, so
``retry_at`` is ``None`` for those; only usage limits carry a time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Unpack
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from thirdshift.errors import (
    AuthFailed,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFacts,
    SessionFailed,
    UsageLimitReached,
)


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


def by_text(
    text: str, now: datetime, resume_missing: re.Pattern[str] | None = None
) -> FailureInfo | None:
    """The failure a CLI's error text names, if it names one; ``now`` resolves a reset time.

    ``resume_missing`` is the CLI's own wording for a Resume of a session it cannot find
    (each built-in Harness module has its ``RESUME_MISSING``); without it none is told.
    """
    if _USAGE_LIMIT.search(text):
        return FailureInfo(UsageLimitReached, reset_time(text, now))
    if resume_missing is not None and resume_missing.search(text):
        return FailureInfo(ResumeTargetMissing)
    if _AUTH.search(text):
        return FailureInfo(AuthFailed)
    if _RATE.search(text):
        return FailureInfo(RateLimited)
    if _OVERLOADED.search(text):
        return FailureInfo(Overloaded)
    return None


def resume_missing_in(text: str | None, resume_missing: re.Pattern[str]) -> FailureInfo | None:
    """``ResumeTargetMissing`` if ``text`` (a line of the CLI's stderr) says, in the CLI's own
    wording, that the session to resume was not found; else None.

    Only that is told apart on stderr: Codex reports it there alone, with nothing on stdout.
    Other stderr text is too loose to go on. A built-in Harness's ``stderr_failure`` is this
    with its module's ``RESUME_MISSING``.
    """
    if text and resume_missing.search(text):
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


def status_kind(status: int) -> type[SessionFailed] | None:
    """The failure an HTTP status of the model API names: 401/403, 429, 5xx; else None."""
    if status in (401, 403):
        return AuthFailed
    if status == 429:
        return RateLimited
    if 500 <= status <= 599:
        return Overloaded
    return None
