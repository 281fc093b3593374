"""What of the orchestrator's environment reaches the CLI, end to end (#12.3, #10.7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sessionkit import MARK

from pytest_thirdshift import FakeCLIs
from thirdshift import Logs, Sessions, claude, codex
from thirdshift._environment import EnvPolicy
from thirdshift.testing import steps

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))
SECRET = "ghp_orchestrator-secret"


@pytest.fixture
def secrets(fake_cli_on_path: FakeCLIs, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-for-claude")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-codex")
    monkeypatch.setenv("LC_TIME", "C")
    fake_cli_on_path.record_env(
        "GITHUB_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LC_TIME", "HOME", "MY_SETTING"
    )
    return fake_cli_on_path


@pytest.mark.parametrize("harness", ["claude", "codex"])
@pytest.mark.parametrize("policy", ["inherit", "minimal"])
def test_a_secret_reaches_the_cli_under_inherit_only(
    secrets: FakeCLIs, tmp_path: Path, no_process_left: str, harness: str, policy: EnvPolicy
) -> None:
    make = claude if harness == "claude" else codex
    choice = make(env={MARK: no_process_left, "MY_SETTING": "on"}, env_policy=policy)
    cli = secrets.harness(harness)
    cli.script(steps.run("true"), steps.say("done"))

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"), tmp_path, choice, progress=list[str]().append
    ) as s:
        assert s.run_to_final_message("implement", "go") == "done"

    (call,) = cli.calls
    assert ("GITHUB_TOKEN" in call.env) == (policy == "inherit")
    assert call.env["MY_SETTING"] == "on"  # the Choice's own, under either policy
    assert call.env["LC_TIME"] == "C"
    assert "HOME" in call.env
    assert "CLAUDECODE" not in call.env
    own, other = (
        ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
        if harness == "claude"
        else ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    )
    assert own in call.env  # its own key, under either policy
    assert (other in call.env) == (policy == "inherit")


def test_a_choice_removes_a_variable_with_none(secrets: FakeCLIs, tmp_path: Path) -> None:
    secrets.claude.script(steps.say("done"))

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"),
        tmp_path,
        claude(env={"GITHUB_TOKEN": None}),
        progress=list[str]().append,
    ) as s:
        s.run("implement", "go")

    (call,) = secrets.claude.calls
    assert "GITHUB_TOKEN" not in call.env
    assert call.env["ANTHROPIC_API_KEY"] == "sk-ant-for-claude"


@pytest.mark.parametrize("policy", ["inherit", "minimal"])
def test_thirdshift_run_takes_the_env_policy(
    secrets: FakeCLIs, tmp_path: Path, policy: str
) -> None:
    secrets.claude.script(steps.say("done"))

    done = subprocess.run(
        [THIRDSHIFT, "run", "--env-policy", policy, "--logs", str(tmp_path / "logs"), "go"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    (call,) = secrets.claude.calls
    assert ("GITHUB_TOKEN" in call.env) == (policy == "inherit")
    assert call.env["ANTHROPIC_API_KEY"] == "sk-ant-for-claude"


def test_thirdshift_run_refuses_an_unknown_env_policy(tmp_path: Path) -> None:
    done = subprocess.run(
        [THIRDSHIFT, "run", "--env-policy", "none", "go"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert "argument --env-policy: invalid choice: 'none' (choose from 'inherit', 'minimal')" in (
        done.stderr
    )
