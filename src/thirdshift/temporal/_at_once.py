"""A heartbeat sent to the server at once, past the SDK's throttle, through a client.

The SDK's core sends an activity's first heartbeat at once and holds every later one back until
80% of the heartbeat timeout has passed since the last it sent (at most 60 s; 30 s with no
timeout), then sends the newest. A session names its id a moment after its first progress line
has heartbeated: held back, the id would reach the server 8 s later under a 10 s heartbeat
timeout, 24 s later under 30 s, and a worker lost meanwhile would have its session started
again rather than continued. So the activity records that heartbeat with the SDK as usual and
also sends it itself (``RecordActivityTaskHeartbeat``, by the attempt's task token), from a
thread of its own so that the activity's thread never waits on the network. The SDK's next
heartbeat carries the same details, so the two never disagree for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from temporalio.client import Client

RPC_TIMEOUT = timedelta(seconds=10)


class AtOnce:
    """Sends heartbeats through ``client`` at once; with no client, does nothing (the SDK's
    own heartbeat, held back or not, is then the only one)."""

    def __init__(self, client: Client | None) -> None:
        self.client = client

    def send(self, task_token: bytes, details: dict[str, Any]) -> threading.Thread | None:
        """Start sending ``details`` for the attempt of ``task_token``; the thread doing it."""
        client = self.client
        if client is None:
            return None
        sending = threading.Thread(
            target=_send, args=(client, task_token, details), name="thirdshift-beat", daemon=True
        )
        sending.start()
        return sending


def _send(client: Client, task_token: bytes, details: dict[str, Any]) -> None:
    handle = client.get_async_activity_handle(task_token=task_token)
    # A server that cannot be reached, or a cancel the answer carries (AsyncActivityCancelled-
    # Error): the SDK's own heartbeats go on and deliver it, so nothing here is kept.
    with contextlib.suppress(Exception):
        asyncio.run(handle.heartbeat(details, rpc_timeout=RPC_TIMEOUT))
