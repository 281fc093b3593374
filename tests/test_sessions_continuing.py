"""``run_to_final_message(kind, prompt, resume=id)``: the first session continues a session cut
off elsewhere (by a worker that stopped), under the same rules as any other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_thirdshift import ScriptedOutside
from thirdshift import Logs, ResumeTargetMissing, Sessions
from thirdshift._logs import command_stamp
from thirdshift._prompts import resume_prompt
from thirdshift.testing import SessionCall


def test_the_first_session_continues_the_id_given_and_its_resume_follows_the_rules(
    tmp_path: Path,
) -> None:
    logs = Logs(tmp_path / "logs", "repo")
    outside = (
        ScriptedOutside()
        .ends(session_id="s1", killed=("pytest",), final_message="started")
        .ends(session_id="s1", final_message="green")
    )
    sessions = Sessions(logs, outside)

    final = sessions.run_to_final_message("fix-continued", "carry on", resume="s1")

    stamp = command_stamp()
    assert final == "green"
    assert outside.sessions == [
        SessionCall(
            kind="fix-continued",
            resume="s1",
            prompt="carry on",
            log=logs.dir / f"repo-{stamp}-fix-continued.jsonl",
        ),
        SessionCall(
            kind="fix-continued-resume",
            resume="s1",
            prompt=resume_prompt(["pytest"]),
            log=logs.dir / f"repo-{stamp}-fix-continued-resume.jsonl",
        ),
    ]


def test_run_takes_the_id_to_continue_too(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs", "repo")
    outside = ScriptedOutside().ends(session_id="s1", final_message="fixed")
    sessions = Sessions(logs, outside)

    sessions.run("fix", "the review found two bugs", resume="s1")

    (call,) = outside.sessions
    assert (call.kind, call.resume, call.prompt) == ("fix", "s1", "the review found two bugs")


def test_an_id_the_cli_does_not_know_fails_as_resume_target_missing(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs", "repo")
    missing = ResumeTargetMissing("claude: No conversation found with session ID: s9")
    outside = ScriptedOutside().fails(missing)
    sessions = Sessions(logs, outside, wait_for_limits=3600)

    with pytest.raises(ResumeTargetMissing):
        sessions.run_to_final_message("fix", "carry on", resume="s9")

    assert [call.resume for call in outside.sessions] == ["s9"]  # tried once, never again
    assert outside.waits == []


def test_the_session_running_now_is_named_until_it_ends(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs", "repo")
    seen: list[object] = []
    holder: list[Sessions] = []

    class Looking(ScriptedOutside):
        def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Any:
            seen.append(holder[0].running)
            return super().run_session(kind, resume, prompt, log)

    outside = Looking().ends(session_id="s1", final_message="done")
    sessions = Sessions(logs, outside)
    holder.append(sessions)

    assert sessions.running is None
    sessions.run("fix", "go")

    assert seen == [("fix", sessions.last_log, sessions.records[0].started_at)]
    assert sessions.running is None
