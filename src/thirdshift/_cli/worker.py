"""``thirdshift worker``: one host of a fleet, running sessions as Temporal activities.

Needs the extra ``thirdshift[temporal]``; without it, one line naming it and exit 2. It reaches
its server as the ``temporal`` CLI does (:mod:`thirdshift.temporal._connection`), waiting for one
not up yet, and holds every request to its policy (:class:`~thirdshift.temporal.WorkerPolicy`).
SIGTERM and SIGINT shut it down gracefully: running sessions are cancelled, their trees
stopped, and it exits 0. Past its usage checks, a run ends the process itself, at its end (see
:func:`run`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import importlib
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thirdshift._cli.exits import Exit
from thirdshift._cli.native_exit import exit_now
from thirdshift._cli.notify_command import notify_command
from thirdshift._containment import CONTAINMENTS
from thirdshift._wiring import notifying

DEFAULT_LOGS = Path("~/.thirdshift/logs")
CONNECT_TIMEOUT = 300.0
MISSING_EXTRA = "thirdshift worker needs the Temporal SDK: pip install 'thirdshift[temporal]'"
OTEL_MISSING = (
    "thirdshift worker --otel needs OpenTelemetry's SDK and OTLP exporter: "
    "pip install 'thirdshift[otel]'"
)


def register(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "worker",
        help="run sessions sent by Temporal workflows on this host (thirdshift[temporal])",
        description=(
            "Poll a Temporal server for sessions: the fleet's shared task queue, to be claimed "
            "as a host, and this host's own queue, to run the sessions sent there. The server "
            "is found as the temporal CLI finds it (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, "
            "TEMPORAL_API_KEY, the TEMPORAL_TLS_* variables, a profile of Temporal's "
            "configuration file), the flags over it. Each request is held to this worker's "
            "policy. SIGTERM or SIGINT cancels the running sessions (their attempts are "
            "continued by id once a worker for this host is back) and exits 0."
        ),
    )
    server = parser.add_argument_group("the server")
    server.add_argument(
        "--address",
        metavar="HOST[:PORT]",
        help="the frontend (a HOST alone means port 7233; default: the configuration's, "
        "else localhost:7233)",
    )
    server.add_argument("--namespace", help="default: the configuration's, else default")
    server.add_argument("--profile", help="a profile of Temporal's configuration file")
    server.add_argument("--tls-cert", type=Path, metavar="PEM", help="client certificate (mTLS)")
    server.add_argument("--tls-key", type=Path, metavar="PEM", help="its private key")
    server.add_argument("--tls-ca", type=Path, metavar="PEM", help="the server's CA certificate")
    server.add_argument(
        "--api-key-file", type=Path, metavar="FILE", help="a file holding the API key (TLS on)"
    )
    server.add_argument(
        "--connect-timeout",
        type=float,
        default=CONNECT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to keep trying a server not up yet (default: {CONNECT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--task-queue", required=True, metavar="Q", help="the fleet's shared task queue"
    )
    parser.add_argument(
        "--host-queue", metavar="HQ", help="this host's own task queue (default: Q@<hostname>)"
    )
    parser.add_argument(
        "--logs", type=Path, default=DEFAULT_LOGS, help=f"log folder (default: {DEFAULT_LOGS})"
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=4,
        metavar="N",
        help="sessions run at once on this host (default: 4)",
    )
    parser.add_argument(
        "--activities",
        nargs="+",
        default=[],
        metavar="MODULE:ATTR",
        help="more activities for the host queue: an activity, or a list of them",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export each session's spans and metrics over OTLP/HTTP, as the standard OTEL_* "
        "variables say (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318), each under "
        "its activity's span through Temporal's tracing interceptor (thirdshift[otel])",
    )
    parser.add_argument(
        "--notify-command",
        metavar="CMD",
        help="run CMD (split as a shell would, run without one) on each event of each session "
        "run here: parked for a limit, resumed, failed, finished; one JSON object on its stdin",
    )
    policy = parser.add_argument_group("the policy (what a request may ask for)")
    policy.add_argument(
        "--worktrees",
        action="append",
        type=Path,
        default=[],
        metavar="ROOT",
        help="a folder every request's worktree must resolve inside (repeatable; default: any)",
    )
    policy.add_argument(
        "--allow-extra-args",
        action="store_true",
        help="let requests pass extra_args to their CLI (refused by default: a flag such as "
        "--settings runs code of the request's choosing)",
    )
    policy.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run sessions without a sandbox (by default each runs in one, which no request can "
        "turn off; docs/security.md)",
    )
    policy.add_argument(
        "--allow-net",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="an endpoint every sandboxed session may reach besides its model API, and the "
        "only ones a request may add (repeatable)",
    )
    policy.add_argument(
        "--containment",
        choices=CONTAINMENTS,
        default="auto",
        help="the weakest containment a request may ask for (default: auto, the most isolated "
        "this machine allows)",
    )
    parser.set_defaults(handler=run)


def _usage_error(message: str) -> int:
    print(f"thirdshift: {message}", file=sys.stderr)
    return Exit.USAGE_ERROR


def _say(line: str) -> None:
    print(f"thirdshift: {line}", file=sys.stderr, flush=True)


def _activities(specs: list[str]) -> list[Callable[..., Any]]:
    """Each ``MODULE:ATTR`` imported: an activity, or an iterable of them."""
    from temporalio.activity import _Definition

    found: list[Callable[..., Any]] = []
    for spec in specs:
        module_name, colon, attr = spec.partition(":")
        if not colon or not module_name or not attr:
            raise ValueError(f"--activities takes MODULE:ATTR, not {spec!r}")
        try:
            value = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"--activities {spec}: {error}") from error
        listed = [value] if callable(value) else value
        try:
            items = list(listed)
        except TypeError as error:
            raise ValueError(
                f"--activities {spec}: {type(value).__name__} is neither an activity nor a list "
                "of them"
            ) from error
        for item in items:
            if _Definition.from_callable(item) is None:
                raise ValueError(
                    f"--activities {spec}: {item!r} is not an activity (decorate it with "
                    "@activity.defn)"
                )
        found.extend(items)
    return found


@dataclass(frozen=True)
class _Traced:
    """What ``--otel`` sets up: Temporal's tracing interceptor for the client, so that each
    activity's span (its parent the workflow's, where the starter traces too) is current as
    its session runs and the session's spans are its children; and, as a block, the spans and
    metrics still held flushed as it ends."""

    interceptors: tuple[Any, ...] = ()
    flush: Callable[[], None] = lambda: None

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        self.flush()


def _traced(wanted: bool) -> _Traced:
    """``--otel``'s set-up (spans and metrics exported over OTLP/HTTP), or nothing; a
    ``ValueError`` naming the extra where it is not installed."""
    if not wanted:
        return _Traced()
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor

        from thirdshift._otlp import exporting
    except ImportError as error:
        raise ValueError(OTEL_MISSING) from error
    return _Traced((TracingInterceptor(),), exporting())


def run(args: argparse.Namespace) -> int:
    if args.max_sessions < 1:
        return _usage_error(f"--max-sessions must be 1 or more, not {args.max_sessions}")
    if not args.connect_timeout >= 0:
        return _usage_error(f"--connect-timeout must be 0 or more, not {args.connect_timeout}")
    for flag, queue in (("--task-queue", args.task_queue), ("--host-queue", args.host_queue)):
        if queue is not None and not queue.strip():
            return _usage_error(f"{flag} must name a queue, not {queue!r}")
    try:
        from thirdshift.temporal._connection import ConnectionRefused, connect, connection
        from thirdshift.temporal._policy import WorkerPolicy
        from thirdshift.temporal._worker import FleetWorker
    except ImportError:
        return _usage_error(MISSING_EXTRA)
    from thirdshift.errors import ConfigurationError

    try:
        activities = _activities(args.activities)
        notify = None if args.notify_command is None else notify_command(args.notify_command)
        policy = WorkerPolicy(
            worktrees=tuple(str(root.expanduser().absolute()) for root in args.worktrees),
            allow_extra_args=args.allow_extra_args,
            containment=args.containment,
            sandbox=not args.no_sandbox,
            network=tuple(args.allow_net),
        )
        if policy.sandbox:  # said before the worker waits for its server, not by each session
            from thirdshift._machine.sandbox import checked_machine

            checked_machine()
        chosen = connection(
            address=args.address,
            namespace=args.namespace,
            profile=args.profile,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            tls_ca=args.tls_ca,
            api_key_file=args.api_key_file,
        )
        traced = _traced(args.otel)  # last: nothing set up for a worker refused above
    except (ValueError, TypeError, ConnectionRefused, ConfigurationError) as error:
        return _usage_error(str(error))

    async def serve() -> int:
        try:
            client = await connect(
                chosen, within=args.connect_timeout, say=_say, interceptors=traced.interceptors
            )
        except ConnectionRefused as error:
            _say(str(error))
            return Exit.FAILED
        try:
            fleet = FleetWorker(
                client,
                task_queue=args.task_queue,
                host_queue=args.host_queue,
                logs=args.logs,
                max_sessions=args.max_sessions,
                activities=activities,
                policy=policy,
            )
        except (ConfigurationError, ValueError, TypeError) as error:
            _say(str(error))
            return Exit.USAGE_ERROR
        if not chosen.guarded:
            _say(
                f"warning: the Temporal frontend at {chosen.address} is reached with neither "
                f"TLS nor an API key: whoever can connect to it can have this worker run "
                f"sessions as {getpass.getuser()}; see docs/fleet.md, 'A frontend only you can "
                "reach'"
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        running = asyncio.create_task(fleet.run())
        _say(
            f"worker for {fleet.host_queue} (fleet queue {fleet.task_queue}) on "
            f"{chosen.address}, up to {args.max_sessions} sessions at once"
        )
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():  # the worker failed on its own (the server gone for good)
            stopped.cancel()
            _say(f"the worker stopped: {running.exception()}")
            return Exit.FAILED
        _say("shutting down: cancelling the running sessions")
        await fleet.shutdown()
        await running
        _say("worker stopped")
        return Exit.OK

    # Every within of this process (each activity's) hands its events to the command.
    # Under --otel, what is still held is exported before the process ends.
    with notifying(notify) if notify is not None else contextlib.nullcontext(), traced:
        code = asyncio.run(serve())
    exit_now(code)
