"""``thirdshift worker`` as an operator starts it: its server found as the ``temporal`` CLI
finds it, one not up yet waited for, an open frontend warned of, what it cannot run refused in
one line. Real processes, a real dev server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from fleet import Claimed, Fast, OnHost, request, thirdshift_command, with_workflows
from temporal_server import DevServer, running_dev_server
from temporalio.client import Client
from temporalio.worker import Worker

from pytest_thirdshift import FakeCLIs
from thirdshift.temporal import SessionResult, ThirdshiftPlugin
from thirdshift.temporal._dev_server import free_port
from thirdshift.testing import steps

READY_WITHIN = 60.0


def worker_argv(tmp_path: Path, *more: str) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [
        thirdshift_command(),
        "worker",
        "--task-queue",
        f"fleet-{tag}",
        "--host-queue",
        f"host-{tag}",
        "--logs",
        str(tmp_path / "logs"),
        *more,
    ]


def started(
    argv: list[str], output: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with open(output, "wb") as written:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=written, stderr=written, env=env
        )


def wait_for(output: Path, text: str, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + READY_WITHIN
    while text not in (said := output.read_text(errors="replace")):
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"never said {text!r}: {said}")
        time.sleep(0.05)
    return said


def test_a_worker_started_before_its_server_waits_for_it_saying_so_then_serves(
    tmp_path: Path, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.say("served"))
    port = free_port()
    argv = worker_argv(tmp_path, "--address", f"127.0.0.1:{port}")
    host = argv[argv.index("--host-queue") + 1]
    output = tmp_path / "worker.out"
    worker = started(argv, output)
    try:
        wait_for(output, "cannot be reached yet", worker)
        (tmp_path / "server").mkdir()
        with running_dev_server(tmp_path / "server", port=port) as server:
            said = wait_for(output, "thirdshift: worker for", worker)
            (tmp_path / "repo").mkdir()

            async def body(client: Client, queue: str) -> SessionResult:
                return await client.execute_workflow(
                    OnHost.run,
                    args=[host, request(tmp_path / "repo"), Fast()],
                    id=f"late-{uuid.uuid4().hex}",
                    task_queue=queue,
                )

            result = with_workflows(server.address, body)
            worker.terminate()
            assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert result.final_message == "served"
    assert f"the Temporal server at 127.0.0.1:{port} cannot be reached yet (" in said
    assert "trying again in 1s" in said


def test_a_worker_whose_server_never_comes_gives_up_after_its_connect_timeout(
    tmp_path: Path,
) -> None:
    port = free_port()
    argv = worker_argv(tmp_path, "--address", f"127.0.0.1:{port}", "--connect-timeout", "2")

    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"thirdshift: the Temporal server at 127.0.0.1:{port} could not ")
    assert "within 2s" in last
    assert "cannot be reached yet" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_worker_takes_its_server_from_the_environment_and_warns_once_of_an_open_frontend(
    tmp_path: Path, temporal_server: DevServer
) -> None:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address}
    output = tmp_path / "worker.out"
    worker = started(worker_argv(tmp_path), output, env)
    try:
        said = wait_for(output, "thirdshift: worker for", worker)
        worker.terminate()
        assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()

    assert f"on {temporal_server.address}, up to 4 sessions at once" in said
    assert said.count("neither TLS nor an API key") == 1
    assert "docs/fleet.md" in said


@pytest.mark.parametrize(
    ("more", "says"),
    [
        (["--activities", "fleet:thirdshift_command"], "is not an activity"),
        (["--activities", "fleet:SCENARIO_WITHIN"], "neither an activity nor a list of them"),
        (["--profile", "no-such-profile"], "Profile 'no-such-profile' not found"),
        (["--api-key-file", "/no/such/key"], "cannot read /no/such/key"),
        (["--connect-timeout", "-1"], "--connect-timeout must be 0 or more"),
    ],
)
def test_a_worker_asked_for_what_it_cannot_do_says_so_in_a_line_and_exits_2(
    tmp_path: Path, more: list[str], says: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    argv = worker_argv(tmp_path, "--address", "127.0.0.1:1", *more)

    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)

    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert says in done.stderr


def test_a_worker_of_one_s_own_is_one_line_with_the_plugin(
    tmp_path: Path, temporal_server: DevServer, fake_cli_on_path: FakeCLIs
) -> None:
    fake_cli_on_path.claude.script(steps.say("from my own worker"))
    (tmp_path / "repo").mkdir()
    queue = f"own-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[list[SessionResult], ThirdshiftPlugin]:
        plugin = ThirdshiftPlugin(tmp_path / "logs", progress=lambda _: None)
        client = await Client.connect(temporal_server.address, plugins=[plugin])
        async with Worker(client, task_queue=queue):  # the one line
            body = with_workflows_here(queue, tmp_path)
            return await body(client), plugin

    results, plugin = asyncio.run(scenario())

    (result,) = results
    assert (result.final_message, result.host) == ("from my own worker", queue)
    assert result.records[0]["temporal"]["host"] == queue
    assert plugin.sessions.at_once.client is not None  # the id goes out at once


def with_workflows_here(
    queue: str, tmp_path: Path
) -> Callable[[Client], Awaitable[list[SessionResult]]]:
    """Claim a host on ``queue`` (the one worker answers with its own queue) and run there."""

    async def body(client: Client) -> list[SessionResult]:
        workflows = f"workflows-{uuid.uuid4().hex}"
        async with Worker(client, task_queue=workflows, workflows=[Claimed]):
            return await client.execute_workflow(
                Claimed.run,
                args=[queue, [request(tmp_path / "repo")], Fast()],
                id=f"own-{uuid.uuid4().hex}",
                task_queue=workflows,
            )

    return body
