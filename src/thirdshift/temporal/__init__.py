"""Sessions as Temporal activities: a fleet of workers, one host queue each.

Needs the extra: ``pip install 'thirdshift[temporal]'``. Workflow code uses
:func:`claim_host` and :func:`run_session` with :class:`SessionRequest`; a worker runs
:class:`SessionActivities` (through :class:`ThirdshiftPlugin`, :class:`FleetWorker`, or the
``thirdshift worker`` command), holding each request to its :class:`WorkerPolicy`. See
docs/fleet.md.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING, Any

try:
    import temporalio as _temporalio  # noqa: F401
except ImportError as _missing:
    raise ImportError(
        "thirdshift.temporal needs the Temporal SDK: pip install 'thirdshift[temporal]'",
        name="temporalio",
    ) from _missing

from thirdshift.temporal._helpers import claim_host, run_session
from thirdshift.temporal._values import HOST_QUEUE, RUN_SESSION, SessionRequest, SessionResult

if TYPE_CHECKING:
    from thirdshift.temporal._activities import SessionActivities
    from thirdshift.temporal._dev_server import running_dev_server
    from thirdshift.temporal._plugin import ThirdshiftPlugin
    from thirdshift.temporal._policy import RequestRefused, WorkerPolicy
    from thirdshift.temporal._worker import FleetWorker

# Loaded on first use, never by workflow code: they import the process machinery.
_LAZY = {
    "SessionActivities": "thirdshift.temporal._activities",
    "FleetWorker": "thirdshift.temporal._worker",
    "ThirdshiftPlugin": "thirdshift.temporal._plugin",
    "WorkerPolicy": "thirdshift.temporal._policy",
    "RequestRefused": "thirdshift.temporal._policy",
    "running_dev_server": "thirdshift.temporal._dev_server",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(_importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "HOST_QUEUE",
    "RUN_SESSION",
    "FleetWorker",
    "RequestRefused",
    "SessionActivities",
    "SessionRequest",
    "SessionResult",
    "ThirdshiftPlugin",
    "WorkerPolicy",
    "claim_host",
    "run_session",
    "running_dev_server",
]
