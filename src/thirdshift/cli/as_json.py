"""What the ``thirdshift`` commands print with ``--json``: records, usage and failures."""

from __future__ import annotations

import dataclasses
from typing import Any

from thirdshift.errors import SessionFailed
from thirdshift.outside import Usage
from thirdshift.records import SessionRecord


def usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    fields = dataclasses.asdict(usage)
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
        "duration": round(record.duration, 3),
        "failure": failure_json(record.failure),
        "containment": record.containment,
    }
