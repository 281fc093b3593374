"""``run_to_final_message(kind, prompt, resume=id)``: the first session continues a session cut
off elsewhere (by a worker that stopped), under the same rules as any other."""

from __future__ import annotations

from pathlib import Path

from pytest_thirdshift import ScriptedOutside, SessionCall
from thirdshift import Logs, Sessions
from thirdshift._logs import command_stamp
from thirdshift._prompts import resume_prompt


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
