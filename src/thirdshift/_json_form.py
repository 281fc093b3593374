"""Records, usage and failures as JSON values: the one form that ``run --json`` prints, that
``inspect`` shows, and that each session's record file (:mod:`thirdshift._record_files`) holds.

The values are plain ``dict``/``list``/``str``/number trees; printing them as ASCII is the
commands' business (:mod:`thirdshift._cli.as_json`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

from thirdshift._outside import Usage
from thirdshift._records import SessionRecord
from thirdshift.errors import Interrupted, LogLimitReached, SessionFailed

MAX_COUNT = 2**63 - 1
"""A larger count (turns, tokens) is printed as ``null``: no session reaches one, only a hostile
stream's figures added up, and past 4,300 digits Python would not even print it."""


def _count(value: int | None) -> int | None:
    return value if value is None or value <= MAX_COUNT else None


def _finite(value: float | None) -> float | None:
    """``value``, or None for NaN and the infinities, which JSON cannot spell."""
    return value if value is None or math.isfinite(value) else None


def absolute(path: Path) -> str:
    """``path`` made absolute against the current folder (as it is, if that is gone)."""
    try:
        return os.path.abspath(path)
    except OSError:  # a relative path, and the current folder deleted under us
        return str(path)


def usage_json(usage: Usage | None) -> dict[str, Any] | None:
    """A usage as an object: each count (``null`` past ``MAX_COUNT``), ``cost_usd``, ``models``,
    ``billing`` (``"api"``, ``"subscription"`` or ``null``) and ``subagents`` (``"counted"``,
    ``"unknown"`` or ``null``)."""
    if usage is None:
        return None
    fields = dataclasses.asdict(usage)
    for name in ("turns", "input_tokens", "output_tokens", "cached_input_tokens"):
        fields[name] = _count(fields[name])
    fields["cost_usd"] = _finite(usage.cost_usd)
    fields["models"] = list(usage.models)
    return fields


def failure_json(failure: BaseException | None) -> dict[str, Any] | None:
    """A failure as ``{"type", "message", "retry_at", "exit_code", "signal", "session_id"}``,
    and for a :class:`~thirdshift.LogLimitReached` its ``max_log_bytes`` and ``dropped_bytes``.

    ``retry_at`` is ISO 8601, ``signal`` a name (``"SIGTERM"``); each is ``null`` where the
    failure does not say (an ``Interrupted`` says only the session id, to continue it by).
    """
    if failure is None:
        return None
    facts = failure if isinstance(failure, SessionFailed) else None
    session_id = failure.session_id if isinstance(failure, SessionFailed | Interrupted) else None
    retry_at = facts.retry_at if facts is not None else None
    signal = facts.signal if facts is not None else None
    said: dict[str, Any] = {
        "type": type(failure).__name__,
        "message": str(failure),
        "retry_at": None if retry_at is None else retry_at.isoformat(),
        "exit_code": facts.exit_code if facts is not None else None,
        "signal": None if signal is None else signal.name,
        "session_id": session_id,
    }
    if isinstance(failure, LogLimitReached):
        said["max_log_bytes"] = failure.max_log_bytes
        said["dropped_bytes"] = failure.dropped_bytes
    return said


def record_json(record: SessionRecord) -> dict[str, Any]:
    """One :class:`SessionRecord`: ``log`` absolute, ``started_at`` ISO 8601, ``duration``
    in seconds, ``usage``, ``failure`` and ``temporal`` as objects or ``null``."""
    return {
        "kind": record.kind,
        "log": absolute(record.log),
        "session_id": record.session_id,
        "killed": list(record.killed),
        "final_message": record.final_message,
        "usage": usage_json(record.usage),
        "started_at": record.started_at.isoformat(),
        "duration": _finite(round(record.duration, 3)),
        "failure": failure_json(record.failure),
        "containment": record.containment,
        "sandbox": record.sandbox,
        "temporal": None if record.temporal is None else dict(record.temporal),
        "command": record.command,
    }
