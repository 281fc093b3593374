"""The REAL opencode, Gemini CLI and Qwen Code under the fake model: killed work seen, resumed.

None of the three says in its stream that background work was killed. opencode's and Gemini's
outlive the CLI, so the supervisor finds them still running once the drain is over; Qwen kills
its own and says so in a status file. Either way the session's ``killed`` names the work, and
the Resume rules run exactly one Resume that continues the same session id.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from real.test_fake_model_chat_and_gemini import running_with

from thirdshift import Logs, Sessions, choice
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.steps import background, say

CLIS = [
    pytest.param(name, marks=pytest.mark.real_cli(name)) for name in ("opencode", "gemini", "qwen")
]


@pytest.mark.parametrize("cli", CLIS)
def test_background_work_left_running_is_seen_as_killed_and_resumed_once(
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    work = worktree / "long-work.sh"
    work.write_text("sleep 300\n")
    model: ScriptedModel = getattr(fake_model, cli)
    model.script(background(f"sh {work}", description="long work"), say("started it"))
    model.script(say("ran it in the foreground"))
    lines: list[str] = []

    try:
        with Sessions.within(
            Logs(tmp_path / "logs", "repo"), worktree, choice(cli), progress=lines.append
        ) as s:
            assert s.run_to_final_message("implement", "Start the long work.") == (
                "ran it in the foreground"
            )
        running = running_with(str(work))
    finally:
        for pid in running_with(str(work)):
            os.kill(pid, signal.SIGKILL)

    assert running == []
    first, resume = s.records
    # Named by the command the model asked for: Gemini's own wrapping of it taken off.
    assert first.killed == (f"sh {work}",)
    (killed,) = first.killed
    assert resume.killed == ()
    assert resume.kind == "implement-resume"
    assert first.session_id is not None
    assert resume.session_id == first.session_id
    resumed = model.scripted_requests()[-1]
    assert resumed.user_text is not None
    assert f"Your background work ({killed}) was killed" in resumed.user_text
    assert (
        f"implement: the session ended with a background task still running ({killed}), which "
        "was killed; resuming it once"
    ) in lines
    assert s.endings == ()
