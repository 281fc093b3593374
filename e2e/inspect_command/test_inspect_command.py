"""`thirdshift inspect` as a process: its output, its exit codes, its help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness_helpers import stdout_of


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thirdshift._cli", "inspect", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_inspect_as_a_process() -> None:
    done = run_cli(stdout_of("codex-uexec-bg"), "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["killed"] == ["sleep 300"]


def test_inspect_as_a_process_prints_text() -> None:
    done = run_cli(stdout_of("claude-bg-skipperms"))
    assert done.returncode == 0
    assert "killed background work:\n  Sleep for five minutes in the background\n" in done.stdout


def test_a_missing_log_exits_2_as_a_process(tmp_path: Path) -> None:
    done = run_cli(tmp_path / "nope.jsonl")
    assert done.returncode == 2
    assert done.stdout == ""
    assert (
        done.stderr
        == f"thirdshift: cannot read {tmp_path / 'nope.jsonl'}: No such file or directory\n"
    )


def test_inspect_is_listed_in_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "thirdshift._cli", "inspect", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0
    assert "--harness" in done.stdout
    assert "--json" in done.stdout
