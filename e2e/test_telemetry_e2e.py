"""Telemetry end to end: real sessions of the fake CLIs (and of the toy, sandboxed) under the
real adapter, traced by the SDK in memory; and a fleet worker's spans through the OTLP/HTTP
exporter to a receiver on 127.0.0.1, under the activities' spans."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from fleet import Fast, OnHost, request, start_worker
from otel_helpers import Otel, otel
from otlp_receiver import receiving
from temporal_server import DevServer
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import Worker
from toy import Toy

from pytest_thirdshift import FakeCLIs
from thirdshift import Choice, Logs, Sandbox, Sessions, Watchdogs, claude, codex
from thirdshift._machine import MachineOutside
from thirdshift._machine.sandbox.bwrap import unavailable
from thirdshift._sandbox import Api, SandboxNeeds
from thirdshift.testing import steps

__all__ = ["otel"]  # the fixture, used by name


def traceparent_of(otel: Otel, name: str, index: int = 0) -> str:
    context = [span for span in otel.spans() if span.name == name][index].context
    assert context is not None
    flags = int(context.trace_flags)
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"


@pytest.mark.parametrize("choice", [claude(model="opus"), codex()], ids=["claude", "codex"])
def test_a_block_its_sessions_and_their_tool_calls_nest_and_the_cli_is_told_its_span(
    otel: Otel, fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice
) -> None:
    fake_cli_on_path.record_env("TRACEPARENT", "TRACESTATE")
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(steps.run("true"), steps.background("sleep 300", description="sleep 300"))
    cli.script(steps.run("true"), steps.say("all green"))

    with Sessions.within(Logs(tmp_path / "logs", "repo"), tmp_path, choice, progress=print) as s:
        s.run("implement", "Make the tests pass.")

    name = f"invoke_agent {choice.harness.name}"
    block = otel.span("invoke_workflow repo")
    first, resume = [span for span in otel.spans() if span.name == name]
    assert block.context is not None
    assert first.context is not None
    assert resume.context is not None
    for session in (first, resume):
        assert session.parent is not None
        assert session.parent.span_id == block.context.span_id
    assert [link.context.span_id for link in resume.links] == [first.context.span_id]
    assert (first.attributes or {})["thirdshift.kind"] == "implement"
    assert (resume.attributes or {})["thirdshift.kind"] == "implement-resume"
    assert (first.attributes or {})["thirdshift.outcome"] == "work_killed"
    assert (first.attributes or {})["gen_ai.conversation.id"] == s.records[0].session_id
    # What the CLI was told, each its own call's span.
    told = [call.env.get("TRACEPARENT") for call in cli.calls]
    assert told == [traceparent_of(otel, name, 0), traceparent_of(otel, name, 1)]
    assert all("TRACESTATE" not in call.env for call in cli.calls)
    tools = {
        session.context.span_id: [
            span.name
            for span in otel.spans()
            if span.parent is not None
            and span.parent.span_id == session.context.span_id
            and span.name.startswith("execute_tool ")
        ]
        for session in (first, resume)
        if session.context is not None
    }
    assert [len(calls) for calls in tools.values()] == [2, 1]


def test_without_a_provider_the_cli_gets_its_environment_as_it_was(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in a process where no test set a provider: the fake only records the variable."""
    inherited = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    monkeypatch.setenv("TRACEPARENT", inherited)
    fake_cli_on_path.record_env("TRACEPARENT")
    fake_cli_on_path.claude.script(steps.say("done"))
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from thirdshift import Logs, Sessions, claude
        logs, worktree = Logs(Path({str(tmp_path / "logs")!r}), "repo"), Path({str(tmp_path)!r})
        with Sessions.within(logs, worktree, claude(), progress=lambda line: None) as s:
            s.run("implement", "go")
        assert not any(name.startswith("opentelemetry") for name in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert (done.returncode, done.stderr) == (0, "")
    (call,) = fake_cli_on_path.claude.calls
    assert call.env["TRACEPARENT"] == inherited


@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
@pytest.mark.usefixtures("toy_on_path")
def test_a_sandboxed_cli_is_told_its_span_too(otel: Otel, worktree: Path, tmp_path: Path) -> None:
    probe = "import json, os; print('FOUND:' + json.dumps(os.environ.get('TRACEPARENT')))"
    needs = SandboxNeeds(
        apis=(Api("https://api.anthropic.com", "ANTHROPIC_BASE_URL", ("ANTHROPIC_API_KEY",)),)
    )
    toy = Toy([f"exec:{probe.encode().hex()}", "out:FINAL:done"], sandbox_needs=needs)
    box = Sandbox(read=(str(Path(__file__).parent),))  # where the toy's program lives
    outside = MachineOutside(
        worktree,
        Choice(toy, sandbox=box, env_policy="minimal"),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=0.5),
        drain=0.5,
    )
    outside.run_session("s", None, "p", tmp_path / "logs" / "s.jsonl")

    [line] = [line for line in toy.readers[-1].lines if line.startswith("FOUND:")]
    assert json.loads(line.removeprefix("FOUND:")) == traceparent_of(otel, "invoke_agent toy")
    span = otel.span("invoke_agent toy")
    assert (span.attributes or {})["thirdshift.sandbox"] is True


def test_a_fleet_workers_sessions_reach_an_otlp_receiver_under_their_activities(
    otel: Otel,
    temporal_server: DevServer,
    fake_cli_on_path: FakeCLIs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``thirdshift worker --otel`` exports over OTLP/HTTP; a workflow started under Temporal's
    tracing interceptor carries its trace to the activity, whose span parents the block's."""
    fake_cli_on_path.claude.script(steps.run("true"), steps.say("done"))
    tag = uuid.uuid4().hex[:8]
    fleet, host = f"fleet-{tag}", f"host-{tag}"
    (tmp_path / "repo").mkdir()

    async def scenario() -> Any:
        client = await Client.connect(temporal_server.address, interceptors=[TracingInterceptor()])
        workflows = f"workflows-{tag}"
        async with Worker(client, task_queue=workflows, workflows=[OnHost]):
            return await asyncio.wait_for(
                client.execute_workflow(
                    OnHost.run,
                    args=[host, request(tmp_path / "repo"), Fast()],
                    id=f"traced-{tag}",
                    task_queue=workflows,
                ),
                timeout=120,
            )

    with receiving() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "factory-worker")
        worker = start_worker(
            temporal_server.address,
            fleet=fleet,
            host=host,
            logs=tmp_path / "logs",
            home=None,
            more=("--otel",),
        )
        try:
            result = asyncio.run(scenario())
        finally:
            assert worker.stop() == 0, worker.output()  # its last spans flushed as it stops
        deadline = time.monotonic() + 30
        while not receiver.named("invoke_agent") and time.monotonic() < deadline:
            time.sleep(0.1)

    assert result.final_message == "done"
    (activity,) = receiver.named("RunActivity:thirdshift.run_session")
    (block,) = receiver.named("invoke_workflow ")
    (session,) = receiver.named("invoke_agent claude")
    (tool,) = receiver.named("execute_tool ")
    assert block.parent_span_id == activity.span_id
    assert session.parent_span_id == block.span_id
    assert tool.parent_span_id == session.span_id
    assert activity.trace_id == session.trace_id
    assert activity.parent_span_id  # the workflow's: the trace began where it was started
    assert session.service == "factory-worker"
    assert session.attributes["gen_ai.provider.name"] == "anthropic"
    assert session.attributes["gen_ai.conversation.id"] == result.session_id
    assert {"gen_ai.client.operation.duration", "thirdshift.sessions"} <= receiver.metrics
    assert os.environ.get("OTEL_SERVICE_NAME") == "factory-worker"  # still the test's
