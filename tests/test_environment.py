"""The environment a session's CLI gets: the policies, the Choice's own variables (#12.3, #10.7)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

import thirdshift
from thirdshift import Choice
from thirdshift._environment import session_environment
from thirdshift.harness import ClaudeHarness, CodexHarness, Harness, Invocation, StreamReader

ORCHESTRATOR = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/factory",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_TIME": "en_GB.UTF-8",
    "TERM": "xterm",
    "TMPDIR": "/tmp/factory",
    "USER": "factory",
    "GITHUB_TOKEN": "ghp_secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "CLAUDECODE": "1",
    "ANTHROPIC_API_KEY": "sk-ant",
    "ANTHROPIC_AUTH_TOKEN": "ant-token",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    "CLAUDE_CODE_OAUTH_TOKEN": "oauth",
    "CLAUDE_CONFIG_DIR": "/home/factory/.claude-work",
    "OPENAI_API_KEY": "sk-openai",
    "CODEX_API_KEY": "codex-key",
    "CODEX_HOME": "/home/factory/.codex",
    "OPENAI_BASE_URL": "http://127.0.0.1:8",
}
BASICS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_TIME", "TERM", "TMPDIR", "USER")


def test_inherit_is_the_default_and_passes_everything_but_the_nesting_variable() -> None:
    for choice in (thirdshift.claude(), thirdshift.codex(), Choice(ClaudeHarness())):
        assert choice.env_policy == "inherit"
        expected = {k: v for k, v in ORCHESTRATOR.items() if k != "CLAUDECODE"}
        assert session_environment(choice, ORCHESTRATOR) == expected


def test_minimal_keeps_the_basics_and_claudes_own_variables_only() -> None:
    env = session_environment(thirdshift.claude(env_policy="minimal"), ORCHESTRATOR)

    claude_own = (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CONFIG_DIR",
    )
    assert env == {name: ORCHESTRATOR[name] for name in (*BASICS, *claude_own)}


def test_minimal_keeps_the_basics_and_codexs_own_variables_only() -> None:
    env = session_environment(thirdshift.codex(env_policy="minimal"), ORCHESTRATOR)

    codex_own = ("OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_HOME", "OPENAI_BASE_URL")
    assert env == {name: ORCHESTRATOR[name] for name in (*BASICS, *codex_own)}


def test_a_harness_without_env_passthrough_gets_the_basics_under_minimal() -> None:
    class Bare(Harness):  # a plugin's Harness that sets no env_passthrough: the default, none
        name = "bare"
        stop_signals = CodexHarness.stop_signals
        skills_dir = ".bare/skills"

        def invocation(
            self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
        ) -> Invocation:
            return Invocation(("bare",), prompt)

        def reader(self, worktree: Path) -> StreamReader:
            return CodexHarness().reader(worktree)

    bare = Choice(Bare(), env_policy="minimal")
    assert bare.harness.env_passthrough == ()
    assert session_environment(bare, ORCHESTRATOR) == {n: ORCHESTRATOR[n] for n in BASICS}


@pytest.mark.parametrize("policy", ["inherit", "minimal"])
def test_the_choices_env_is_applied_last_and_none_removes(policy: str) -> None:
    choice = thirdshift.claude(
        env={"MY_SETTING": "on", "PATH": "/opt/bin", "HOME": None, "NOT_THERE": None},
        env_policy=policy,  # type: ignore[arg-type]
    )

    env = session_environment(choice, ORCHESTRATOR)

    assert env["MY_SETTING"] == "on"
    assert env["PATH"] == "/opt/bin"
    assert "HOME" not in env
    assert "NOT_THERE" not in env
    assert ("GITHUB_TOKEN" in env) == (policy == "inherit")


@pytest.mark.parametrize("policy", ["inherit", "minimal"])
def test_pwd_names_the_directory_the_cli_starts_in_not_the_orchestrators(policy: str) -> None:
    base = {**ORCHESTRATOR, "PWD": "/home/factory/orchestrator"}
    choice = thirdshift.codex(env_policy=policy)  # type: ignore[arg-type]

    assert session_environment(choice, base, Path("/work/wt"))["PWD"] == "/work/wt"
    assert session_environment(choice, base).get("PWD") == (
        base["PWD"] if policy == "inherit" else None
    )


def test_the_orchestrators_environment_is_never_changed() -> None:
    base = dict(ORCHESTRATOR)
    session_environment(thirdshift.codex(env={"GITHUB_TOKEN": None, "X": "1"}), base)
    assert base == ORCHESTRATOR


def test_a_choice_keeps_its_env_as_sorted_pairs_so_it_stays_frozen_and_hashable() -> None:
    given = {"B": "2", "A": None}
    choice = thirdshift.codex(env=given)
    given["C"] = "3"  # changing the mapping afterwards changes nothing

    assert choice.env == (("A", None), ("B", "2"))
    assert hash(choice) == hash(thirdshift.codex(env={"A": None, "B": "2"}))
    assert Choice(CodexHarness(), env={"B": "2", "A": None}) == choice  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        choice.env = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"": "x"}, "environment variable name '' is not one a process can have"),
        ({"A=B": "x"}, "environment variable name 'A=B' is not one a process can have"),
        ({"A\0": "x"}, "environment variable name 'A\\x00' is not one a process can have"),
        ({"A": "x\0y"}, "environment variable A: its value must be a string without NUL"),
        ({"A": 1}, "environment variable A: its value must be a string without NUL"),
    ],
)
def test_an_env_no_process_can_have_is_refused_in_one_line(
    env: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        thirdshift.claude(env=env)  # type: ignore[arg-type]


def test_an_env_given_as_one_string_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^env must be a mapping of names to values, not str$"):
        thirdshift.codex(env="A=1")  # type: ignore[arg-type]


def test_an_unknown_policy_is_refused_in_one_line() -> None:
    with pytest.raises(
        ValueError, match=r"^unknown environment policy 'none': choose inherit or minimal$"
    ):
        thirdshift.claude(env_policy="none")  # type: ignore[arg-type]
