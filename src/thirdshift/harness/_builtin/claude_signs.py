"""What Claude Code's stream says of a failed turn, and its wording: the signs
:class:`ClaudeSigns` collects event by event, and :func:`claude_failure`, which tells from them
which :class:`~thirdshift.errors.SessionFailed` the turn shows.

Claude's alone (Qwen Code's stream, Claude's shape, is read with them too); the generic rules
they fall back on are :mod:`thirdshift.harness._failures`. As observed on Claude Code 2.1.197
(the captures in ``tests/transcripts``): Claude ends a failed API call with a synthetic
``assistant`` line carrying ``error`` (``"rate_limit"``, ``"authentication_failed"``,
``"server_error"``) and a ``result`` with ``is_error: true`` and ``api_error_status`` (``null``
for repeated 529s); each retry before gave a ``system``/``api_retry`` with ``error_status``. On
a subscription (an OAuth login) Claude marks *every* 429 with a ``rate_limit_event`` ``status:
"rejected"``: a plan limit's carries ``resetsAt`` (epoch seconds) and its text says so ("You've
hit your session limit · resets 5:12am (UTC)"); any other 429's has no ``resetsAt`` and its text
says "Server is temporarily limiting requests (not your usage limit)", a ``RateLimited``. So
the event alone tells nothing apart: the reset time and the wording do. A Resume of an unknown
id: ``errors: ["No conversation found with session ID: …"]``, said on stderr too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from thirdshift.errors import (
    AuthFailed,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    TurnLimitReached,
    UsageLimitReached,
)
from thirdshift.harness._failures import (
    FailureInfo,
    by_text,
    from_epoch,
    reset_time,
    status_kind,
)
from thirdshift.harness._lines import cut, shorten

RESUME_MISSING = re.compile(
    r"No conversation found with session ID|--resume requires a valid session ID", re.IGNORECASE
)
"""Claude's wording for a Resume of a session it cannot find (in the result, and on stderr)."""

# Claude's texts for a plan's limits and credits: "hit your monthly spend limit", "reached your
# Fable 5 limit", "out of usage credits", "Your org is out of usage", "out of extra usage".
_CLAUDE_USAGE_LIMIT = re.compile(
    r"\b(?:hit|reached) your (?:[\w'-]+ ){0,4}limit\b|\bout of (?:extra )?usage\b"
    r"|\busage credit cap is reached\b",
    re.IGNORECASE,
)
# What Claude says of a 429 on a login that is not the plan's limit.
_NOT_USAGE_LIMIT = re.compile(r"\bnot your usage limit\b", re.IGNORECASE)

# The `error` codes Claude puts on a synthetic assistant line or an api_retry.
_CLAUDE_AUTH_CODES = frozenset({"authentication_failed"})
_CLAUDE_RATE_CODES = frozenset({"rate_limit"})
_CLAUDE_OVERLOAD_CODES = frozenset({"server_error", "overloaded"})


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
    if RESUME_MISSING.search(text):
        return FailureInfo(ResumeTargetMissing)
    status = turn.api_error_status if turn.api_error_status is not None else turn.retry_status
    if status is not None:
        kind = status_kind(status)
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
        self.refusals = 0
        """The ``api_retry`` lines in a row that said the credentials were refused (401)."""

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
            refused = self._retry_status == 401 or self._retry_error in _CLAUDE_AUTH_CODES
            self.refusals = self.refusals + 1 if refused else 0
        elif kind == "assistant":
            error = event.get("error")
            if isinstance(error, str):
                self._error_code = shorten(error)
            else:
                self.refusals = 0  # the model answered: whatever was refused is no longer
        elif kind == "result":
            self._close_turn(event)
            self.refusals = 0
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
