"""``ThirdshiftPlugin``: thirdshift's activities on the SDK's plugin interface.

Given to ``Client.connect(..., plugins=[...])`` (or to one ``Worker``), it adds the two
activities of :class:`~thirdshift.temporal.SessionActivities` to every worker made with that
client, a thread pool for them where the worker has none (``run_session`` is synchronous), and
the client, so that a session's id reaches the server at once
(:mod:`thirdshift.temporal._at_once`); and it keeps the client's data converter, which carries
:class:`~thirdshift.temporal.SessionRequest` and its result as JSON (a default one), codecs of
the user's included. So a worker of one's own is one line::

    client = await Client.connect(address, plugins=[ThirdshiftPlugin("~/logs")])
    await Worker(client, task_queue="factory").run()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from temporalio.converter import DataConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkerConfig

from thirdshift.temporal._activities import HEARTBEAT_EVERY, SessionActivities
from thirdshift.temporal._policy import WorkerPolicy

PLUGIN_NAME = "thirdshift.ThirdshiftPlugin"
THREADS = 8
"""Threads of the pool a worker with none gets: one per session it runs at once (its
``max_concurrent_activities`` caps how many do)."""


def _converter(existing: DataConverter | None) -> DataConverter:
    return existing if existing is not None else DataConverter.default


class ThirdshiftPlugin(SimplePlugin):
    """Runs sessions on the workers of a client. Takes what
    :class:`~thirdshift.temporal.SessionActivities` takes (``host_queue=None``: the queue a
    worker polls is its host's, so that one worker on one queue is a host of its own).

    :attr:`sessions` is the ``SessionActivities`` it registers.
    """

    def __init__(
        self,
        logs: Path | str,
        *,
        host_queue: str | None = None,
        env: Mapping[str, str | None] | None = None,
        progress: Callable[[str], None] | None = None,
        heartbeat_every: float = HEARTBEAT_EVERY,
        policy: WorkerPolicy | None = None,
    ) -> None:
        self.sessions = SessionActivities(
            logs,
            host_queue=host_queue,
            env=env,
            progress=progress,
            heartbeat_every=heartbeat_every,
            policy=policy,
        )
        super().__init__(
            PLUGIN_NAME,
            data_converter=_converter,
            activities=[*self.sessions.on_host_queue, *self.sessions.on_shared_queue],
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        if self.sessions.at_once.client is None:
            self.sessions.at_once.client = config.get("client")
        if config.get("activity_executor") is None:
            config["activity_executor"] = ThreadPoolExecutor(
                max_workers=THREADS, thread_name_prefix="thirdshift"
            )
        return config
