"""What the ``thirdshift`` commands print with ``--json``: records, usage and failures.

Everything goes out through :func:`dumps`: one line of printable ASCII, whatever the stream
held, so that a script always gets one valid JSON object and a terminal never gets a control.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from typing import Any

from thirdshift.errors import SessionFailed
from thirdshift.outside import Usage
from thirdshift.records import SessionRecord

MAX_COUNT = 2**63 - 1
"""A larger count (turns, tokens) is printed as ``null``: no session reaches one, only a hostile
stream's figures added up, and past 4,300 digits Python would not even print it."""


def dumps(value: Any) -> str:
    """``value`` as one line of JSON in printable ASCII.

    ``json``'s ASCII form writes every other character as a ``\\uXXXX`` escape (DEL too): so
    C1 controls (``\\u009b``), bidi controls and line separators from a stream never reach a
    terminal raw, and a lone surrogate (``\\ud800`` in the stream's JSON), which no encoding
    can write, is printed as its escape instead of raising.
    """
    return json.dumps(value, ensure_ascii=True)


def pieces(value: Any) -> Iterator[str]:
    """:func:`dumps` of ``value`` a piece at a time (a key, a value), to write as they come."""
    return json.JSONEncoder(ensure_ascii=True).iterencode(value)


def _count(value: int | None) -> int | None:
    return value if value is None or value <= MAX_COUNT else None


def _finite(value: float | None) -> float | None:
    """``value``, or None for NaN and the infinities, which JSON cannot spell."""
    return value if value is None or math.isfinite(value) else None


def usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    fields = dataclasses.asdict(usage)
    for name in ("turns", "input_tokens", "output_tokens", "cached_input_tokens"):
        fields[name] = _count(fields[name])
    fields["cost_usd"] = _finite(usage.cost_usd)
    fields["models"] = list(usage.models)
    return fields


def failure_json(failure: BaseException | None) -> dict[str, Any] | None:
    """``{"type", "message", "retry_at"}`` of a failure (``retry_at`` in ISO 8601 or null)."""
    if failure is None:
        return None
    retry_at = failure.retry_at if isinstance(failure, SessionFailed) else None
    return {
        "type": type(failure).__name__,
        "message": str(failure),
        "retry_at": None if retry_at is None else retry_at.isoformat(),
    }


def record_json(record: SessionRecord) -> dict[str, Any]:
    return {
        "kind": record.kind,
        "log": str(record.log),
        "session_id": record.session_id,
        "killed": list(record.killed),
        "final_message": record.final_message,
        "usage": usage_json(record.usage),
        "started_at": record.started_at.isoformat(),
        "duration": _finite(round(record.duration, 3)),
        "failure": failure_json(record.failure),
        "containment": record.containment,
    }
