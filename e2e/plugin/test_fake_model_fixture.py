"""The fake_model fixture as downstream test suites load it (pytester, no real CLI needed)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

# A stand-in `claude` on PATH: these tests check the fixture, not the CLI (e2e/real runs that).
HEADER = """
import http.client
import json
import os
import stat

import pytest

from thirdshift.testing.steps import say


@pytest.fixture
def claude_on_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\\nexit 0\\n")
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir), prepend=os.pathsep)


def ask_claude(text):
    host, port = os.environ["ANTHROPIC_BASE_URL"].removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port))
    body = {"model": "m", "tools": [{"name": "Bash"}], "stream": False,
            "messages": [{"role": "user", "content": text}]}
    key = os.environ["ANTHROPIC_API_KEY"]  # the fake model's own: it answers no other
    connection.request("POST", "/v1/messages", json.dumps(body), {"x-api-key": key})
    return json.loads(connection.getresponse().read())
"""

PLAYED = """
def test_played(claude_on_path, fake_model, tmp_path):
    fake_model.claude.script(say("hi"))
    assert ask_claude("hello")["content"] == [{"type": "text", "text": "hi"}]
    assert os.environ["HOME"].startswith(str(tmp_path))
    assert os.environ["CODEX_HOME"].startswith(str(tmp_path))
    assert "ANTHROPIC_AUTH_TOKEN" not in os.environ
    assert fake_model.claude.requests[0].user_text == "hello"
"""

UNUSED = """
def test_leaves_script(claude_on_path, fake_model):
    fake_model.claude.script(say("never asked"))


@pytest.mark.thirdshift(assert_all_consumed=False)
def test_leaves_script_on_purpose(claude_on_path, fake_model):
    fake_model.claude.script(say("never asked"))
"""

UNSCRIPTED = """
def test_asks_without_a_script(fake_model):
    ask_claude("anyone there?")
"""

MISSING = """
def test_scripts_a_cli_that_is_not_installed(fake_model, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    fake_model.codex.script(say("hi"))
"""

RESTORED = """
def test_one(claude_on_path, fake_model):
    fake_model.claude.script(say("hi"))
    ask_claude("x")


def test_two_sees_its_own_environment_again():
    assert os.environ.get("ANTHROPIC_AUTH_TOKEN") == "outer-token"
    assert "ANTHROPIC_BASE_URL" not in os.environ
"""


def test_a_played_script_passes_with_the_environment_isolated(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "outer-token")
    pytester.makepyfile(HEADER + PLAYED)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_unused_script_fails_the_test_unless_the_marker_allows_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(HEADER + UNUSED)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*fake_model: claude: a script was never used: say('never asked')",
            "  (a test that leaves script unused on purpose says so with "
            "@pytest.mark.thirdshift(assert_all_consumed=False))",
        ]
    )


def test_a_request_that_found_no_script_fails_the_test_naming_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(HEADER + UNSCRIPTED)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*fake_model: claude: a request found no script: /v1/messages*'anyone there?'"]
    )


def test_a_missing_cli_fails_in_one_line_that_says_how_to_install_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(HEADER + MISSING)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*fake_model: codex is not on PATH; install the pinned version with "
            "`npm install -g @openai/codex@0.171.0`"
        ]
    )
    assert "another exception occurred" not in result.stdout.str()


def test_the_environment_is_restored_after_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "outer-token")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    pytester.makepyfile(HEADER + RESTORED)
    pytester.runpytest_subprocess().assert_outcomes(passed=2)


def test_each_test_has_its_own_fake_model_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one=HEADER + PLAYED, test_two=HEADER + PLAYED.replace("test_played", "test_again")
    )
    pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=2)
