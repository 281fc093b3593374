"""A session's failure as the ``ApplicationError`` Temporal retries, or does not, by its rules.

The error's ``type`` is the thirdshift class name (``"RateLimited"``), so that workflow code
and retry policies can tell failures apart without importing thirdshift; ``details[0]`` holds
the attempt's last heartbeat details (``{session_id, records, ...}``) for whoever handles it.

A failure reaches the server whole only under its size limit (2 MB on a default server, past
which it keeps only ``Failure exceeds size limit.``, losing the type, the retryable flag and
the delay): so the message is cut as the heartbeats' texts are, the details' records are
already kept under :data:`~thirdshift.temporal._beats.MAX_RECORDS_BYTES`, and the thirdshift
error is not chained on as the cause (its message, up to megabytes of a stream's text, would
go along whole).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from thirdshift._shown import shown
from thirdshift.errors import AuthFailed, SessionFailed, ThirdshiftError
from thirdshift.temporal._beats import cut

FIRST_UNKNOWN_WAIT = timedelta(seconds=60)
"""A limit whose end the CLI did not say is retried after this, doubling with each such limit
before it (as ``wait_for_limits`` waits one out), up to the retry policy's maximum interval
(else :data:`LONGEST_UNKNOWN_WAIT`)."""
LONGEST_UNKNOWN_WAIT = timedelta(hours=1)
LIMITS = frozenset({"RateLimited", "UsageLimitReached", "Overloaded"})
"""The retryable failures: API limits, which set the retry's delay themselves."""


def limits_unsaid(records: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``records`` failed on a limit whose end their CLI did not say."""
    count = 0
    for record in records:
        failure = record.get("failure")
        if isinstance(failure, Mapping) and failure.get("type") in LIMITS:
            count += failure.get("retry_at") is None
    return count


def application_error(
    failure: ThirdshiftError,
    details: dict[str, Any],
    *,
    now: datetime | None = None,
    unsaid_before: int = 0,
    longest: timedelta | None = None,
) -> ApplicationError:
    """``failure`` as an ``ApplicationError``: retryable only if the failure is, and then
    retried no sooner than its ``retry_at`` where it has one, else after
    :data:`FIRST_UNKNOWN_WAIT` doubled for each of the ``unsaid_before`` limits of earlier
    attempts whose end was not said either, up to ``longest`` (the retry policy's maximum
    interval, so that a workflow that retries within seconds, as a demo or a test does, is
    obeyed). The retry policy's own interval is for a worker lost, which is retried at once.

    A session's own ending (a ``SessionFailed``: a limit, a spent budget) is ``BENIGN``: the
    workflow acts on it and the worker's progress lines said it, so the SDK logs it at DEBUG
    rather than as a warning with a traceback. What the host must mend stays a warning, for
    whoever runs the worker: an ``AuthFailed`` (its credentials), a missing CLI, a
    configuration.
    """
    retryable = isinstance(failure, SessionFailed) and failure.retryable
    delay: timedelta | None = None
    if retryable and isinstance(failure, SessionFailed):
        if failure.retry_at is not None:
            left = failure.retry_at - (now or datetime.now(UTC))
            delay = max(left, timedelta(seconds=1))  # Temporal takes no zero delay
        else:
            cap = longest or LONGEST_UNKNOWN_WAIT
            delay = min(FIRST_UNKNOWN_WAIT * 2 ** min(unsaid_before, 16), cap)
            delay = max(delay, timedelta(seconds=1))
    return ApplicationError(
        cut(shown(str(failure), "message")) or "",
        details,
        type=type(failure).__name__,
        non_retryable=not retryable,
        next_retry_delay=delay,
        category=(
            ApplicationErrorCategory.BENIGN
            if isinstance(failure, SessionFailed) and not isinstance(failure, AuthFailed)
            else ApplicationErrorCategory.UNSPECIFIED
        ),
    )
