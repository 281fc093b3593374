"""A session's failure as the ``ApplicationError`` Temporal retries, or does not, by its rules.

The error's ``type`` is the thirdshift class name (``"RateLimited"``), so that workflow code
and retry policies can tell failures apart without importing thirdshift; ``details[0]`` holds
``{session_id, records}`` for whoever handles it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from thirdshift._shown import shown
from thirdshift.errors import AuthFailed, SessionFailed, ThirdshiftError


def application_error(
    failure: ThirdshiftError, details: dict[str, Any], *, now: datetime | None = None
) -> ApplicationError:
    """``failure`` as an ``ApplicationError``: retryable only if the failure is, and retried no
    sooner than its ``retry_at`` where it has one (else the retry policy's backoff applies).

    A session's own ending (a ``SessionFailed``: a limit, a spent budget) is ``BENIGN``: the
    workflow acts on it and the worker's progress lines said it, so the SDK logs it at DEBUG
    rather than as a warning with a traceback. What the host must mend stays a warning, for
    whoever runs the worker: an ``AuthFailed`` (its credentials), a missing CLI, a
    configuration.
    """
    retryable = isinstance(failure, SessionFailed) and failure.retryable
    delay: timedelta | None = None
    if retryable and isinstance(failure, SessionFailed) and failure.retry_at is not None:
        left = failure.retry_at - (now or datetime.now(UTC))
        delay = max(left, timedelta(seconds=1))  # Temporal takes no zero delay
    return ApplicationError(
        shown(str(failure), "message"),
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
