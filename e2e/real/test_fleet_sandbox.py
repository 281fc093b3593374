"""A fleet's session cannot reach the Temporal frontend (security review 3, H2).

An agent found the frontend on the host's loopback, connected without credentials and completed
another session's activity with a forged result. A worker sandboxes every session by default:
here the real Claude, run by ``thirdshift.run_session`` as a worker runs it (Temporal's
``ActivityEnvironment``), tries the dev server's port from its Bash tool and is refused, while
its session still reaches its model (the fake model on the same loopback) and ends.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from temporal_server import DevServer
from temporalio.testing import ActivityEnvironment

from thirdshift._machine.sandbox.bwrap import unavailable
from thirdshift.temporal import SessionActivities, SessionRequest
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.steps import run, say

pytestmark = [
    pytest.mark.real_cli("claude"),
    pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}"),
]


def test_a_workers_session_cannot_reach_the_frontend_yet_reaches_its_model(
    temporal_server: DevServer, fake_model: FakeModel, tmp_path: Path
) -> None:
    host, port = temporal_server.address.rsplit(":", 1)
    probe = (
        f"(exec 3<>/dev/tcp/{host}/{port} && echo FRONTEND REACHED || echo frontend refused) "
        "> frontend.txt 2>&1"
    )
    fake_model.claude.script(run(probe), say("done, and nothing forged"))
    (tmp_path / "repo").mkdir()
    activities = SessionActivities(tmp_path / "logs", host_queue="here")
    request = SessionRequest(worktree=str(tmp_path / "repo"), kind="implement", prompt="Go.")

    result = ActivityEnvironment().run(activities.run_session, request)

    assert (tmp_path / "repo" / "frontend.txt").read_text().strip().endswith("frontend refused")
    assert result.final_message == "done, and nothing forged"  # its model was reached
    assert all(record["sandbox"] for record in result.records)
    with socket.create_connection((host, int(port)), timeout=5):  # the frontend is there
        pass
