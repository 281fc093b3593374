"""How an attempt of ``thirdshift.run_session`` starts: afresh, continued by id, or again.

Temporal hands an attempt after the first the last attempt's heartbeat details, and nothing
else of it; so the activity heartbeats the session id as soon as the stream names it, the
failure that ended an attempt on an API limit, the records of every session the attempts
so far ran (what they spent counts against the request's Budget), and the session under way
(``running``, for the next attempt to record should the worker be lost), for the next attempt
to read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thirdshift._prompts import continued_prompt, worker_stopped_prompt
from thirdshift._record_files import record_problem
from thirdshift._values import Ended, Usage
from thirdshift.temporal._values import SessionRequest


@dataclass(frozen=True)
class Start:
    """The session an attempt runs: its label, prompt, and the id it continues (if any);
    ``earlier``, the records of the sessions earlier attempts ran, as their heartbeats said."""

    kind: str
    prompt: str
    resume: str | None = None
    earlier: tuple[dict[str, Any], ...] = ()
    again: Start | None = None
    """What to run should the CLI not know the id this start continues (a worker lost before
    the CLI kept its session): the request again, as ``<kind>-retry``."""
    lost: object = None
    """The session the last attempt was running, as its last heartbeat said (``running``):
    ``None`` unless that attempt was lost mid-session."""


def _last_details(heartbeat_details: Sequence[object]) -> dict[str, object]:
    last = heartbeat_details[0] if heartbeat_details else None
    return last if isinstance(last, dict) else {}


def start_of(request: SessionRequest, attempt: int, heartbeat_details: Sequence[object]) -> Start:
    """The first attempt runs the request (continuing the request's ``resume``, if it names
    one); a later one continues the last attempt's session by id (``<kind>-continued``), with a
    prompt naming why it was cut off (the API limit it failed on, else the worker that
    stopped), or without an id runs the request again (``<kind>-retry``)."""
    if attempt <= 1:
        return Start(request.kind, request.prompt, resume=request.resume)
    last = _last_details(heartbeat_details)
    records = last.get("records")
    # Only what a record file would hold: the details are the server's copy of what we sent.
    earlier = (
        tuple(record for record in records if record_problem(record) is None)
        if isinstance(records, list)
        else ()
    )
    lost = last.get("running")
    again = Start(
        f"{request.kind}-retry", request.prompt, resume=request.resume, earlier=earlier, lost=lost
    )
    session_id = last.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return again
    limit = last.get("failure")
    prompt = continued_prompt(limit) if isinstance(limit, str) else worker_stopped_prompt()
    # The request's own id is the request's to answer for: an unknown one fails, not retried.
    fallback = None if session_id == request.resume else again
    return Start(
        f"{request.kind}-continued",
        prompt,
        resume=session_id,
        earlier=earlier,
        again=fallback,
        lost=lost,
    )


def earlier_sessions(records: Sequence[dict[str, Any]]) -> tuple[Ended, ...]:
    """What each earlier attempt's session used, by its id, as its record says."""
    found = []
    for record in records:
        usage = record.get("usage")
        used = None
        if usage is not None:
            counts = ("turns", "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd")
            used = Usage(
                **{name: usage.get(name) for name in counts},
                models=tuple(usage.get("models") or ()),
            )
        found.append(Ended(record.get("session_id"), usage=used))
    return tuple(found)
