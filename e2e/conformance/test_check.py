"""``thirdshift check`` end to end, on the pinned real CLIs (issue 9, section 5)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from pinned_clis import PINNED_BIN, path_without_clis

from thirdshift._cli.check import cli_version, sandbox_line
from thirdshift._machine.sandbox.bwrap import unavailable
from thirdshift.testing.conformance import scenarios
from thirdshift.testing.conformance._recording import recorded, recorded_version

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))
LINE = re.compile(
    r"^(claude|codex|opencode|gemini|qwen) (\d+\.\d+\.\d+)  (.+)  (ok|FAILED)  (\d+\.\d)s$"
)

# A claude that is the real one, except that it never reports a killed task: it drops the
# task_updated and task_notification lines from the stream, as a CLI release might.
SILENT_KILLS = """\
import subprocess, sys

cli = subprocess.Popen([{real!r}, *sys.argv[1:]], stdout=subprocess.PIPE)
for line in cli.stdout:
    if b'"subtype":"task_updated"' in line or b'"subtype":"task_notification"' in line:
        continue
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(cli.wait())
"""


def check(*args: str, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THIRDSHIFT, "check", *args],
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def scenario_lines(stdout: str) -> list[re.Match[str]]:
    return [match for line in stdout.splitlines() if (match := LINE.match(line))]


# Claude's plays pass through the same play() in test_conformance.py; passing is shown here on
# Codex, whose check takes ~11 s against Claude's ~25 s, and failing on Claude below.
@pytest.mark.real_cli("codex")
def test_check_passes_on_the_pinned_codex_one_line_per_scenario(tmp_path: Path) -> None:
    only_codex = tmp_path / "bin"
    only_codex.mkdir()
    (only_codex / "codex").symlink_to(PINNED_BIN / "codex")
    # Built from scratch: the user's own claude (every thirdshift user has one) is hidden.
    path = os.pathsep.join(
        [str(only_codex), path_without_clis(tmp_path / "system", os.environ["PATH"])]
    )
    assert shutil.which("claude", path=path) is None

    done = check(path=path)  # no --harness: every Harness whose CLI is on PATH

    assert done.returncode == 0, done.stdout + done.stderr
    lines = scenario_lines(done.stdout)
    assert [match[3] for match in lines] == [scenario.title for scenario in scenarios("codex")]
    assert {(match[1], match[2], match[4]) for match in lines} == {("codex", "0.171.0", "ok")}
    assert done.stdout.splitlines() == [
        "containment: cgroup (this machine allows cgroup, namespace, scan)",
        sandbox_line(None),
        *[f"{name}  not on PATH, not checked" for name in ("claude", "opencode", "gemini", "qwen")],
        *[match[0] for match in lines],
        "9 scenarios: all ok",
    ]


@pytest.mark.real_cli("codex")
def test_check_json_on_the_pinned_codex() -> None:
    done = check("--harness", "codex", "--json", path=os.environ["PATH"])

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["failed"] == 0
    assert report["passed"] == len(scenarios("codex"))
    assert {entry["version"] for entry in report["scenarios"]} == {"0.171.0"}
    assert all(entry["ok"] and entry["differences"] == [] for entry in report["scenarios"])
    assert report["containment"] == {"used": "cgroup", "allowed": ["cgroup", "namespace", "scan"]}
    assert report["sandbox"]["used"] is False


@pytest.mark.real_cli("codex")
@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
def test_check_plays_every_scenario_sandboxed_on_the_pinned_codex() -> None:
    done = check("--harness", "codex", "--sandbox", "--json", path=os.environ["PATH"])

    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["sandbox"] == {"used": True, "available": True, "why_not": None}
    assert (report["passed"], report["failed"]) == (len(scenarios("codex")), 0)


@pytest.mark.real_cli("codex")
def test_check_records_each_scenarios_streams_filtered(tmp_path: Path) -> None:
    streams = tmp_path / "streams"
    done = check("--harness", "codex", "--record", str(streams), path=os.environ["PATH"])

    assert done.returncode == 0, done.stdout + done.stderr
    assert recorded_version("codex", streams) == "0.171.0"
    made = {recording.scenario: recording for recording in recorded(streams)}
    assert sorted(made) == sorted(scenario.name for scenario in scenarios("codex"))
    killed = made["background-killed"]
    assert [session.kind for session in killed.sessions] == ["task", "task-resume"]
    text = "\n".join(line for session in killed.sessions for line in session.lines)
    assert '"thread_id":"<session-1>"' in text
    assert str(tmp_path) not in text


@pytest.mark.real_cli("codex")
def test_check_says_when_a_recording_cannot_be_written_mid_run(tmp_path: Path) -> None:
    streams = tmp_path / "streams"
    streams.mkdir()
    (streams / "codex").write_text("a file where the CLI's folder goes")
    done = check("--harness", "codex", "--record", str(streams), path=os.environ["PATH"])

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"thirdshift: cannot record into {str(streams)!r}: ")
    assert "Traceback" not in done.stderr


def test_check_says_when_it_cannot_record(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    done = check("--harness", "codex", "--record", str(tmp_path / "afile" / "x"), path="/nowhere")

    assert done.returncode == 2
    assert done.stderr.startswith("thirdshift: cannot record into ")


@pytest.mark.real_cli("codex")
def test_check_plays_under_a_forced_containment_and_says_which() -> None:
    done = check("--harness", "codex", "--containment", "scan", "--json", path=os.environ["PATH"])

    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["containment"]["used"] == "scan"


def test_check_with_an_unknown_containment_is_a_usage_error() -> None:
    done = check("--containment", "none-such", path=os.environ["PATH"])

    assert done.returncode == 2
    assert "invalid choice: 'none-such'" in done.stderr


@pytest.mark.real_cli("claude")
def test_check_fails_naming_the_scenario_on_a_claude_that_does_not_report_killed_tasks(
    tmp_path: Path,
) -> None:
    script = tmp_path / "silent_kills.py"
    script.write_text(SILENT_KILLS.format(real=str(PINNED_BIN / "claude")), encoding="utf-8")
    wrapper = tmp_path / "bin" / "claude"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nexec '{sys.executable}' -S '{script}' \"$@\"\n")
    wrapper.chmod(0o755)

    done = check("--harness", "claude", path=f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")

    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = {match[3]: match[4] for match in scenario_lines(done.stdout)}
    assert verdicts["background killed → one Resume"] == "FAILED"
    assert verdicts["Resume killed again → carry on"] == "FAILED"
    assert verdicts["hello"] == "ok"
    block = done.stdout.split("background killed → one Resume  FAILED", 1)[1].splitlines()[1:]
    said = block[: next(number for number, line in enumerate(block) if LINE.match(line))]
    assert "    session task: killed work: expected sleep 300, got none" in said
    assert "    the Resume was not started" in said
    # The committed recording shows what this claude no longer prints.
    assert (
        "    stream, against the recording: task: no longer in the stream: "
        "system/task_notification, system/task_updated"
    ) in said
    assert said[-1].startswith("    (what thirdshift relies on here: background work left running")
    assert re.search(r"^10 scenarios: \d ok, \d FAILED$", done.stdout, re.M), done.stdout


@pytest.mark.real_cli("opencode", "gemini", "qwen")
def test_check_reads_the_version_of_each_newer_pinned_cli() -> None:
    # Each prints its bare version on stdout (opencode's Bun binary, Gemini's and Qwen's Node).
    versions = {program: cli_version(program) for program in ("opencode", "gemini", "qwen")}

    assert versions == {"opencode": "1.18.33", "gemini": "0.61.0", "qwen": "0.24.4"}


# Gemini's plays are the quickest of the three newer CLIs (~3 s each; opencode takes 3-6 s just
# to start); all three are played through the same play() in test_conformance.py.
@pytest.mark.real_cli("gemini")
def test_check_plays_the_pinned_gemini_one_line_per_scenario() -> None:
    done = check("--harness", "gemini", path=os.environ["PATH"])

    assert done.returncode == 0, done.stdout + done.stderr
    lines = scenario_lines(done.stdout)
    assert [match[3] for match in lines] == [scenario.title for scenario in scenarios("gemini")]
    assert {(match[1], match[2], match[4]) for match in lines} == {("gemini", "0.61.0", "ok")}
    assert done.stdout.splitlines() == [
        "containment: cgroup (this machine allows cgroup, namespace, scan)",
        sandbox_line(None),
        *[match[0] for match in lines],
        "6 scenarios: all ok",
    ]


def test_check_of_an_unknown_harness_is_a_usage_error() -> None:
    done = check("--harness", "nope", path=os.environ["PATH"])

    assert done.returncode == 2
    assert done.stderr == (
        "thirdshift: unknown Harness nope: choose one of claude, codex, opencode, gemini, qwen\n"
    )
    assert done.stdout == ""


def test_check_of_a_harness_whose_cli_is_not_installed_exits_2(tmp_path: Path) -> None:
    done = check("--harness", "codex", path=str(tmp_path))

    assert done.returncode == 2
    assert done.stderr == (
        "thirdshift: codex is not on PATH: install it, or choose another Harness\n"
    )


def test_check_with_no_cli_on_path_at_all_exits_2(tmp_path: Path) -> None:
    done = check(path=str(tmp_path))

    assert done.returncode == 2
    assert done.stderr == (
        "thirdshift: none of the Harnesses' CLIs is on PATH "
        "(claude, codex, opencode, gemini, qwen)\n"
    )


@pytest.mark.real_cli("claude")
def test_ctrl_c_stops_check_with_exit_130_and_leaves_nothing_running() -> None:
    # The e2e conftest fails the test if any process it started (the CLI included) survives.
    child = pexpect.spawn(
        THIRDSHIFT,
        ["check", "--harness", "claude"],
        env=dict(os.environ),
        encoding="utf-8",
        timeout=60,
    )
    child.expect(r"claude \S+  hello  ok")

    child.sendintr()

    child.expect("thirdshift: interrupted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in (child.before or "")
