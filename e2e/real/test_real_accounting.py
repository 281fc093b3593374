"""Accounting on the REAL claude and codex under the fake model: how a session was billed and
whether its usage counts its sub-agents, a billing a Choice does not allow, and a key the API
refuses for good, stopped in seconds rather than after minutes of the CLI's own retries."""

from __future__ import annotations

from pathlib import Path

import pytest

from thirdshift import AuthFailed, Logs, Sessions, choice, claude, codex
from thirdshift.errors import ConfigurationError
from thirdshift.harness import Choice
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.steps import http_error, say


def run_one(tmp_path: Path, chosen: Choice) -> Sessions:
    worktree = tmp_path / "worktree"
    worktree.mkdir(exist_ok=True)
    with Sessions.within(
        Logs(tmp_path / "logs", "repo"), worktree, chosen, progress=lambda _: None
    ) as sessions:
        sessions.run("implement", "Say hi.")
    return sessions


@pytest.mark.parametrize(
    "cli", [pytest.param(name, marks=pytest.mark.real_cli(name)) for name in ("claude", "codex")]
)
def test_a_record_says_how_the_session_was_billed_and_that_it_counts_sub_agents(
    fake_model: FakeModel, tmp_path: Path, cli: str
) -> None:
    getattr(fake_model, cli).script(say("hi"))
    (record,) = run_one(tmp_path, choice(cli)).records
    assert record.usage is not None
    # Claude's modelUsage counts sub-agents; Codex's are read from its rollouts afterwards.
    assert (record.usage.billing, record.usage.subagents) == ("api", "counted")


@pytest.mark.real_cli("claude")
@pytest.mark.thirdshift(assert_all_consumed=False)  # refused before it asks the model
def test_a_stray_api_key_fails_a_claude_that_must_bill_its_login_before_anything_starts(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", fake_model.key)  # a login, and a key too
    fake_model.claude.script(say("never said"))
    with pytest.raises(ConfigurationError, match="requires billing='subscription'"):
        run_one(tmp_path, claude(billing="subscription"))
    assert fake_model.claude.requests == []


@pytest.mark.real_cli("claude")
@pytest.mark.thirdshift(assert_all_consumed=False)  # stopped as its stream starts
def test_a_claude_on_a_login_is_stopped_as_its_init_says_so_when_it_must_bill_a_key(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", fake_model.key)
    fake_model.claude.script(say("never said"))
    with pytest.raises(ConfigurationError, match=r"claude was stopped as it started: .*login"):
        run_one(tmp_path, claude(billing="api"))


@pytest.mark.real_cli("claude")
def test_a_key_claude_is_refused_is_stopped_after_its_second_retry(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    # Left alone, Claude 2.1.197 asks ten times more over about three minutes.
    fake_model.claude.script(http_error(401, message="invalid x-api-key"))
    with pytest.raises(AuthFailed) as refused:
        run_one(tmp_path, claude())
    assert str(refused.value).startswith("claude was stopped: the API refused its key 2 times")
    assert len(fake_model.claude.scripted_requests()) <= 3  # not 11


@pytest.mark.real_cli("codex")
def test_a_key_codex_is_refused_is_stopped_after_its_second_retry(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.codex.script(http_error(401, message="invalid api key"))
    with pytest.raises(AuthFailed) as refused:
        run_one(tmp_path, codex())
    assert str(refused.value).startswith("codex was stopped: the API refused its key 2 times")
    assert len(fake_model.codex.scripted_requests()) <= 4  # not 6
