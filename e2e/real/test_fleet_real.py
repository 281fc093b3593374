"""The REAL claude under the fake model, as a Temporal activity: a workflow claims a host, the
``thirdshift worker`` there runs the session, and its killed background work is resumed once,
in the same session, on that host."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from fleet import WORKFLOWS, Claimed, Fast, start_worker
from temporal_server import DevServer
from temporalio.client import Client
from temporalio.worker import Worker

from thirdshift._prompts import resume_prompt
from thirdshift.temporal import SessionRequest, SessionResult
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.steps import background, say


@pytest.mark.real_cli("claude")
def test_the_real_claude_runs_through_a_worker_with_its_resume_on_the_same_host(
    temporal_server: DevServer, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.claude.script(background("sleep 300", description="sleep 300"), say("started"))
    fake_model.claude.script(say("ran them in the foreground: green"))
    (tmp_path / "repo").mkdir()
    tag = uuid.uuid4().hex[:8]
    fleet, host = f"fleet-{tag}", f"host-{tag}"
    sent = SessionRequest(worktree=str(tmp_path / "repo"), kind="implement", prompt="Go.")

    async def scenario() -> list[SessionResult]:
        client = await Client.connect(temporal_server.address)
        queue = f"workflows-{tag}"
        async with Worker(client, task_queue=queue, workflows=list(WORKFLOWS)):
            return await asyncio.wait_for(
                client.execute_workflow(
                    Claimed.run,
                    args=[fleet, [sent], Fast(heartbeat_timeout=10.0)],
                    id=f"real-{tag}",
                    task_queue=queue,
                ),
                timeout=240,
            )

    worker = start_worker(
        temporal_server.address, fleet=fleet, host=host, logs=tmp_path / "logs", home=None
    )
    try:
        (result,) = asyncio.run(scenario())
    finally:
        assert worker.stop() == 0

    assert result.host == host
    assert result.final_message == "ran them in the foreground: green"
    assert [r["kind"] for r in result.records] == ["implement", "implement-resume"]
    requests = fake_model.claude.scripted_requests()
    assert len({r.session_id for r in requests}) == 1  # the Resume continued the session
    assert result.session_id == result.records[0]["session_id"] is not None
    assert resume_prompt(["sleep 300"]) in (requests[-1].user_text or "")
