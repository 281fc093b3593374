"""``thirdshift fake-model`` with the pinned real CLI run by hand against it: its lines pasted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from served_model import fake_model


@pytest.mark.real_cli("claude")
def test_the_real_claude_runs_the_script_file_in_the_pasted_environment(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    steps = [{"run": "echo made > proof.txt"}, {"say": "I made proof.txt."}]
    script.write_text(json.dumps(steps))
    work = tmp_path / "work"
    work.mkdir()

    with fake_model(tmp_path, "--cli", "claude", "--script", str(script)) as served:
        done = served.in_its_shell(
            "claude", "-p", "--permission-mode", "auto", "Make the proof.", cwd=work
        )
        code, stderr = served.stop()

    assert done.returncode == 0, done.stderr
    assert done.stdout == "I made proof.txt.\n"
    assert (work / "proof.txt").read_text() == "made\n"  # its real Bash tool ran the step
    assert code == 0
    assert "/v1/messages: run('echo made > proof.txt')" in stderr
    assert "/v1/messages: end_turn" in stderr
