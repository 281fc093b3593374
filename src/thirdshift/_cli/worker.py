"""``thirdshift worker``: one host of a fleet, running sessions as Temporal activities.

Needs the extra ``thirdshift[temporal]``; without it, one line naming it and exit 2. SIGTERM
and SIGINT shut it down gracefully: running sessions are cancelled, their trees stopped, and
it exits 0. Past its usage checks, a run ends the process itself, at its end (see :func:`run`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from thirdshift._cli.native_exit import exit_now
from thirdshift._cli.notify_command import notify_command
from thirdshift._wiring import notifying

USAGE_ERROR = 2
FAILED = 1
DEFAULT_LOGS = Path("~/.thirdshift/logs")
MISSING_EXTRA = "thirdshift worker needs the Temporal SDK: pip install 'thirdshift[temporal]'"


def register(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "worker",
        help="run sessions sent by Temporal workflows on this host (thirdshift[temporal])",
        description=(
            "Poll a Temporal server for sessions: the fleet's shared task queue, to be claimed "
            "as a host, and this host's own queue, to run the sessions sent there. SIGTERM or "
            "SIGINT cancels the running sessions (their attempts are continued by id once a "
            "worker for this host is back) and exits 0."
        ),
    )
    parser.add_argument("--address", required=True, metavar="HOST:PORT", help="the server")
    parser.add_argument("--namespace", default="default", help="default: default")
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
        "--notify-command",
        metavar="CMD",
        help="run CMD (split as a shell would, run without one) on each event of each session "
        "run here: parked for a limit, resumed, failed, finished; one JSON object on its stdin",
    )
    parser.set_defaults(handler=run)


def _usage_error(message: str) -> int:
    print(f"thirdshift: {message}", file=sys.stderr)
    return USAGE_ERROR


def _activities(specs: list[str]) -> list[Callable[..., Any]]:
    """Each ``MODULE:ATTR`` imported: an activity, or an iterable of them."""
    found: list[Callable[..., Any]] = []
    for spec in specs:
        module_name, colon, attr = spec.partition(":")
        if not colon or not module_name or not attr:
            raise ValueError(f"--activities takes MODULE:ATTR, not {spec!r}")
        try:
            value = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"--activities {spec}: {error}") from error
        found.extend(value if not callable(value) else [value])
    return found


def run(args: argparse.Namespace) -> int:
    if args.max_sessions < 1:
        return _usage_error(f"--max-sessions must be 1 or more, not {args.max_sessions}")
    for flag, queue in (("--task-queue", args.task_queue), ("--host-queue", args.host_queue)):
        if queue is not None and not queue.strip():
            return _usage_error(f"{flag} must name a queue, not {queue!r}")
    try:
        from temporalio.client import Client

        from thirdshift.temporal._worker import FleetWorker
    except ImportError:
        return _usage_error(MISSING_EXTRA)
    try:
        activities = _activities(args.activities)
        notify = None if args.notify_command is None else notify_command(args.notify_command)
    except (ValueError, TypeError) as error:
        return _usage_error(str(error))

    async def serve() -> int:
        try:
            client = await Client.connect(args.address, namespace=args.namespace)
        except Exception as error:  # the SDK raises its own kinds for an address refused
            print(f"thirdshift: cannot reach {args.address}: {error}", file=sys.stderr)
            return FAILED
        fleet = FleetWorker(
            client,
            task_queue=args.task_queue,
            host_queue=args.host_queue,
            logs=args.logs,
            max_sessions=args.max_sessions,
            activities=activities,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        running = asyncio.create_task(fleet.run())
        print(
            f"thirdshift: worker for {fleet.host_queue} (fleet queue {fleet.task_queue}) "
            f"on {args.address}, up to {args.max_sessions} sessions at once",
            file=sys.stderr,
            flush=True,
        )
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():  # the worker failed on its own (the server gone for good)
            stopped.cancel()
            print(f"thirdshift: the worker stopped: {running.exception()}", file=sys.stderr)
            return FAILED
        print("thirdshift: shutting down: cancelling the running sessions", file=sys.stderr)
        await fleet.shutdown()
        await running
        print("thirdshift: worker stopped", file=sys.stderr)
        return 0

    # Every within of this process (each activity's) hands its events to the command.
    with notifying(notify) if notify is not None else contextlib.nullcontext():
        code = asyncio.run(serve())
    exit_now(code)
