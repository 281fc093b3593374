"""FakeModel's steps and faults as the REAL CLIs take them: each step's tool call runs for real."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from thirdshift import Choice, Logs, SessionFailed, Sessions, claude, codex
from thirdshift.errors import RateLimited, UsageLimitReached
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.fakemodel._environment import CODEX_PROVIDER
from thirdshift.testing.steps import (
    at_capacity,
    edit,
    hang,
    load_skill,
    quota_spent,
    run,
    say,
    stall,
    too_many_requests,
)

CHOICES = [
    pytest.param(claude(), id="claude", marks=pytest.mark.real_cli("claude")),
    pytest.param(codex(), id="codex", marks=pytest.mark.real_cli("codex")),
]
SKILL = "---\nname: review\ndescription: Review the change\n---\nTHE REVIEW SKILL BODY\n"


def scripted(fake_model: FakeModel, choice: Choice) -> ScriptedModel:
    side: ScriptedModel = getattr(fake_model, choice.harness.name)
    return side


def worktree_of(tmp_path: Path) -> Path:
    worktree = tmp_path / "worktree"
    worktree.mkdir(exist_ok=True)
    return worktree


def run_one(tmp_path: Path, choice: Choice, prompt: str = "Go.") -> str | None:
    logs = Logs(tmp_path / "logs", "repo")
    with Sessions.within(
        logs, worktree_of(tmp_path), choice, progress=lambda _line: None
    ) as sessions:
        return sessions.run_to_final_message("work", prompt)


@pytest.mark.parametrize("choice", CHOICES)
def test_edit_creates_a_file_and_then_replaces_it(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    scripted(fake_model, choice).script(
        edit("notes.md", "first\nversion\n"), edit("notes.md", "second\n"), say("edited")
    )
    assert run_one(tmp_path, choice) == "edited"
    assert (worktree_of(tmp_path) / "notes.md").read_text() == "second\n"


@pytest.mark.parametrize("choice", CHOICES)
def test_load_skill_reads_the_skill_where_the_cli_keeps_it(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    folder = choice.harness.skills_dir  # .claude/skills or .agents/skills
    skill = worktree_of(tmp_path) / folder / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    model = scripted(fake_model, choice)
    model.script(load_skill("review"), say("reviewed"))

    assert run_one(tmp_path, choice) == "reviewed"
    after = model.scripted_requests()[-1]
    carried = [after.user_text or "", *after.tool_results]
    assert any("THE REVIEW SKILL BODY" in text for text in carried), carried


@pytest.mark.parametrize("choice", CHOICES)
def test_a_skill_within_copies_in_is_loaded_though_git_ignores_the_copy(
    fake_model: FakeModel, tmp_path: Path, choice: Choice
) -> None:
    # The copy's own .gitignore (*) hides it from git; the CLI must find the skill all the same.
    skills = tmp_path / "skills"
    (skills / "review").mkdir(parents=True)
    (skills / "review" / "SKILL.md").write_text(SKILL)
    worktree = worktree_of(tmp_path)
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    model = scripted(fake_model, choice)
    model.script(load_skill("review"), say("reviewed"))

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"), worktree, choice, skills=skills, progress=print
    ) as sessions:
        assert sessions.run_to_final_message("work", "Go.") == "reviewed"

    after = model.scripted_requests()[-1]
    carried = [after.user_text or "", *after.tool_results]
    assert any("THE REVIEW SKILL BODY" in text for text in carried), carried
    assert not (worktree / choice.harness.skills_dir).exists()


@pytest.mark.real_cli("claude")
def test_claudes_security_classifier_is_answered_so_the_command_runs(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    # Under --permission-mode auto Claude asks a classifier side request about this command;
    # an answer it cannot parse would block it (and the session would still end well).
    fake_model.claude.script(run("rm -rf gone && git push origin main --force; touch ran"))
    run_one(tmp_path, claude())
    assert (worktree_of(tmp_path) / "ran").exists()
    assert [request.reply for request in fake_model.claude.requests if request.side]


@pytest.mark.real_cli("claude")
def test_claude_retries_an_overloaded_answer_with_the_next_step(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.claude.script(at_capacity(), say("answered on the retry"))
    assert run_one(tmp_path, claude()) == "answered on the retry"
    assert [request.reply for request in fake_model.claude.scripted_requests()] == [
        "at_capacity()",
        "end_turn",
    ]


@pytest.mark.real_cli("codex")
def test_codex_reports_a_usage_limit_in_its_own_words_without_retrying(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.codex.script(quota_spent(time.time() + 3600))
    with pytest.raises(SessionFailed, match="hit your usage limit"):
        run_one(tmp_path, codex())
    assert len(fake_model.codex.scripted_requests()) == 1


@pytest.mark.real_cli("claude")
def test_a_hung_request_times_out_on_claudes_header_timeout(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude's wait for response headers; the retry is answered at once, so load cannot reach it.
    monkeypatch.setenv("API_TIMEOUT_MS", "3000")
    fake_model.claude.script(hang(), say("answered the retry"))
    assert run_one(tmp_path, claude()) == "answered the retry"
    assert [request.reply for request in fake_model.claude.scripted_requests()] == [
        "hang()",
        "end_turn",
    ]


@pytest.mark.real_cli("codex")
def test_a_stalled_stream_fails_on_codexs_idle_timeout(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    provider = f"model_providers.{CODEX_PROVIDER}"
    bounded = codex(
        extra_args=[
            "-c",
            f"{provider}.stream_idle_timeout_ms=1000",
            "-c",
            f"{provider}.stream_max_retries=0",
        ]
    )
    fake_model.codex.script(stall())
    with pytest.raises(SessionFailed, match="idle timeout waiting for SSE"):
        run_one(tmp_path, bounded)


@pytest.mark.real_cli("claude")
def test_a_subscriber_claude_reports_its_session_limit_with_the_reset(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What env(subscriber=True) does, for a test under the fixture: a login token, no key.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", fake_model.key)
    resets = int(time.time()) + 3600
    fake_model.claude.script(quota_spent(resets))
    with pytest.raises(UsageLimitReached, match="You've hit your session limit") as limited:
        run_one(tmp_path, claude())
    assert limited.value.resets_at is not None
    assert abs(limited.value.resets_at.timestamp() - resets) < 60  # Claude shows minutes


@pytest.mark.real_cli("claude")
def test_a_subscriber_claude_s_plain_429_is_a_rate_limit_not_its_usage_limit(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As tests/transcripts/claude-ratelimit-oauth was made: a login, a 429 without the headers
    # of a plan limit. Claude still says "rejected", but gives no reset time.
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", fake_model.key)  # the only key it takes
    fake_model.claude.script(too_many_requests(1))
    with pytest.raises(RateLimited, match="not your usage limit") as limited:
        run_one(tmp_path, claude())
    assert limited.value.retry_at is None
