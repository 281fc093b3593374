"""Links in the operator's skills folder, through ``thirdshift run --skills`` (#15.7).

The unit tests (tests/test_skills.py) cover each kind of link; this one runs the attack the
review found as an orchestrator meets it: an agent of one session, running as the operator,
plants a link in the skills folder, and the next session would copy what it leads to (the
orchestrator's own environment, which ``--env-policy minimal`` keeps from the agent) into its
worktree.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_thirdshift import FakeCLIs
from thirdshift.testing import steps

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))
SECRET = "orchestrator-only-secret-4711"


def thirdshift(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THIRDSHIFT, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_link_to_proc_self_environ_planted_by_an_agent_stops_the_next_run(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORCHESTRATOR_TOKEN", SECRET)  # inherited by thirdshift, hidden by minimal
    skills = tmp_path / "skills"
    (skills / "review").mkdir(parents=True)
    (skills / "review" / "SKILL.md").write_text("# review\n")
    worktree = tmp_path / "repo"
    worktree.mkdir()
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    planted = skills / "review" / "notes.md"
    run = ("run", "--env-policy", "minimal", "--skills", str(skills), "--logs", str(tmp_path))
    fake_cli_on_path.claude.script(
        steps.run(f"ln -s /proc/self/environ {planted}"), steps.say("ok")
    )

    first = thirdshift(*run, "review it", cwd=worktree)
    second = thirdshift(*run, "review it again", cwd=worktree)

    assert first.returncode == 0, first.stderr
    assert planted.is_symlink()
    assert second.returncode == 2  # the skills folder's fault: a configuration error
    assert re.fullmatch(
        rf"thirdshift: refusing to copy the skill review: {re.escape(str(planted))} leads into "
        r"/proc \(/proc/\d+/environ\)",
        second.stderr.splitlines()[-1],
    )
    assert len(fake_cli_on_path.claude.calls) == 1  # the second session never started
    held = [p for p in worktree.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert held == []
