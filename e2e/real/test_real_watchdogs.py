"""The idle watchdog on the REAL claude and codex, against a model that accepts the request and
never answers (neither CLI bounds that wait by itself: Codex has no setting for it at all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from thirdshift import Choice, Logs, Sessions, SessionStalled, Watchdogs, claude, codex
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.steps import hang

CHOICES = [
    pytest.param(claude(), id="claude", marks=pytest.mark.real_cli("claude")),
    pytest.param(codex(), id="codex", marks=pytest.mark.real_cli("codex")),
]


@pytest.mark.parametrize("choice", CHOICES)
@pytest.mark.thirdshift(assert_all_consumed=False)  # the hung request is the script's last
def test_a_model_that_never_answers_is_stopped_by_the_idle_watchdog(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    model: ScriptedModel = getattr(fake_model, choice.harness.name)
    model.script(hang())
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    lines: list[str] = []

    with (
        pytest.raises(SessionStalled) as stalled,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            worktree,
            choice,
            progress=lines.append,
            # Long enough for a real CLI to start and say its session id on a loaded 2-core
            # machine (Claude's Node start took over 3 s there), short enough to be a stall.
            watchdogs=Watchdogs(idle=8.0),
        ) as sessions,
    ):
        sessions.run("implement", "Say hello.")

    assert str(stalled.value) == f"{choice.harness.name} was stopped: no output for 8s"
    assert stalled.value.session_id is not None  # the stream named it before it went quiet
    assert "implement: session started" in lines
    log = sessions.last_log
    assert log is not None
    assert log.read_bytes()  # what the CLI wrote before it hung is all there
