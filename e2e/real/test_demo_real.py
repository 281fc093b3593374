"""``thirdshift demo --real``: the demo's scenario on the REAL claude, under the fake model.

A newcomer watches a real Claude Code lose its background test run and be resumed once, with no
API key. The scenario is the one ``make demo`` plays on the bundled fake claude.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))
RESUMING = (
    "implement: the session ended with a background task still running (Run the test suite), "
    "which was killed; resuming it once"
)
FINAL = "Re-ran the test suite in the foreground: 3 passed. greet() now names the person."


def demo(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THIRDSHIFT, "demo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def session_id(log: Path) -> str:
    done = subprocess.run(
        [THIRDSHIFT, "inspect", "--json", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: str = json.loads(done.stdout)["session_id"]
    return found


@pytest.mark.real_cli("claude")
def test_the_real_claude_loses_its_test_run_and_is_resumed_once(tmp_path: Path) -> None:
    folder = tmp_path / "demo"

    done = demo("--real", "--folder", str(folder), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "the REAL Claude Code" in done.stdout
    assert f"  {FINAL}" in done.stdout
    assert "killed background work:\n  Run the test suite" in done.stdout
    assert done.stderr.count(RESUMING) == 1, done.stderr
    assert "implement-resume: $ ./run-tests" in done.stderr
    (first,) = (folder / "logs").glob("*-implement.jsonl")
    (resume,) = (folder / "logs").glob("*-implement-resume.jsonl")
    assert len(list((folder / "logs").glob("*.jsonl"))) == 2
    assert session_id(resume) == session_id(first)
    assert 'f"Hello, {name}!"' in (folder / "repo" / "greet.py").read_text()
    # Claude's own state stayed in the demo's folder, not in the user's HOME.
    assert (folder / "home" / ".claude").is_dir()


def test_without_claude_on_path_it_says_how_to_install_it(tmp_path: Path) -> None:
    done = demo("--real", cwd=tmp_path, env={"PATH": str(tmp_path), "HOME": str(tmp_path)})

    assert done.returncode == 2
    assert done.stderr == (
        "thirdshift: demo --real needs the real claude on PATH: in a checkout of thirdshift, "
        "`make clis` installs the pinned CLIs and `PATH=$PWD/clis/node_modules/.bin:$PATH` "
        "puts them first; elsewhere, `npm install -g @anthropic-ai/claude-code@2.1.197` "
        "(or run the demo without --real)\n"
    )
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing made
