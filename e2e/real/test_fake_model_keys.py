"""The REAL CLIs against a fake model that is not theirs: refused, and each says why.

A FakeModel answers only the key its ``env()`` hands out (issue 15, item 6). A CLI holding any
other key gets its API's own 401, and reports it as an authentication failure (``AuthFailed``),
not as a crash or a network error; the script waiting for it is not played.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from thirdshift import AuthFailed, Logs, Sessions, choice
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.steps import say

CLIS = [
    pytest.param(name, marks=pytest.mark.real_cli(name))
    for name in ("claude", "codex", "opencode", "gemini", "qwen")
]
OTHER_KEY = "thirdshift-fake-" + "0" * 32
"""A key of the right shape that this fake model did not make."""


def give_every_cli_another_key(fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in list(os.environ.items()):
        if value == fake_model.key:
            monkeypatch.setenv(name, OTHER_KEY)
    # opencode reads its key from its settings, under the HOME the fixture made.
    settings = Path(os.environ["HOME"]) / ".config" / "opencode" / "opencode.json"
    settings.write_text(settings.read_text().replace(fake_model.key, OTHER_KEY))
    assert fake_model.key not in json.dumps(dict(os.environ)) + settings.read_text()


@pytest.mark.thirdshift(assert_all_consumed=False)  # the script is the one never to be played
@pytest.mark.parametrize("cli", CLIS)
def test_a_cli_with_another_key_is_refused_and_reports_an_auth_failure(
    fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: str
) -> None:
    model: ScriptedModel = getattr(fake_model, cli)
    model.script(say("the answer meant for the holder of the key"))
    give_every_cli_another_key(fake_model, monkeypatch)
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")  # Claude retries a 401 for minutes
    worktree = tmp_path / "worktree"
    worktree.mkdir()

    with (
        pytest.raises(AuthFailed) as refused,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"), worktree, choice(cli), progress=lambda _line: None
        ) as sessions,
    ):
        sessions.run_to_final_message("work", "Say hello.")

    assert "thirdshift FakeModel: invalid API key" in str(refused.value)  # the CLI's report
    assert model.requests == []
