"""The thirdshift command as people run it: run, demo, usage errors, and interrupts in a tty."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pexpect
import pytest

from pytest_thirdshift import FakeCLIs
from thirdshift._machine.sandbox.bwrap import unavailable
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))


def thirdshift(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THIRDSHIFT, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_run_prints_progress_on_stderr_and_the_final_message_on_stdout(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(steps.run("echo hi"), steps.say("all done"))

    done = thirdshift(
        "run", "--harness", "codex", "--logs", str(tmp_path / "logs"), "fix it", cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "all done\n"
    tagged = [line.split(" ", 2)[2] for line in done.stderr.splitlines()]
    name = f"[{tmp_path.name}] "  # the log name: the worktree's by default
    assert all(line.startswith(name) for line in tagged)
    progress = [line.removeprefix(name) for line in tagged]
    assert progress[1:4] == ["session: session started", "session: $ echo hi", progress[3]]
    assert re.match(
        r"session: session ended after \d+s: ", progress[3]
    )  # the time is the machine's
    assert fake_cli_on_path.codex.calls[0].stdin == "fix it"
    logs = list((tmp_path / "logs").glob(f"{tmp_path.name}-*-session.jsonl"))
    assert len(logs) == 1


@pytest.mark.parametrize("prompt_args", [["-"], []], ids=["dash", "none"])
def test_run_reads_the_prompt_from_stdin(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, prompt_args: list[str]
) -> None:
    fake_cli_on_path.claude.script(steps.say("ok"))

    done = thirdshift(
        "run",
        "--logs",
        str(tmp_path),
        "--name",
        "n",
        "--kind",
        "review",
        *prompt_args,
        cwd=tmp_path,
        stdin="a prompt\nof two lines\n",
    )

    assert done.returncode == 0, done.stderr
    assert fake_cli_on_path.claude.calls[0].stdin == "a prompt\nof two lines\n"
    assert list(tmp_path.glob("n-*-review.jsonl"))


@pytest.mark.parametrize("on_stdin", [False, True], ids=["argument", "stdin"])
def test_a_prompt_that_is_not_utf8_reaches_the_cli_as_it_was(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, on_stdin: bool
) -> None:
    # Once a traceback in the thread that writes the prompt, and a CLI waiting for ever for
    # its stdin to close.
    fake_cli_on_path.claude.script(steps.say("ok"))
    prompt = b"fix \xff it"
    argv = [THIRDSHIFT, "run", "--logs", str(tmp_path / "logs")]

    done = subprocess.run(
        [*argv, "-"] if on_stdin else [*argv, prompt],
        cwd=tmp_path,
        input=prompt if on_stdin else b"",
        capture_output=True,
        timeout=60,
        check=False,
        # Strict, as stdin is under a UTF-8 locale other than C.UTF-8 (this machine's own).
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )

    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stdout == b"ok\n"
    (call,) = fake_cli_on_path.claude.calls
    assert call.stdin == "fix \ufffd it"  # the fake reads its stdin as UTF-8, as the CLIs do


def test_a_failed_session_exits_1_naming_the_error_and_the_log(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.exit(3))

    done = thirdshift("run", "--logs", str(tmp_path / "logs"), "go", cwd=tmp_path)

    assert done.returncode == 1
    assert done.stdout == ""
    (log,) = (tmp_path / "logs").glob("*-session.jsonl")
    assert done.stderr.splitlines()[-2:] == [
        "thirdshift: SessionFailed, not retryable: claude exited 3",
        f"thirdshift: session log: {log}",
    ]


def test_a_cli_missing_from_path_exits_2_without_a_session_log(tmp_path: Path) -> None:
    done = subprocess.run(
        [THIRDSHIFT, "run", "--logs", str(tmp_path / "logs"), "go"],
        cwd=tmp_path,
        env={**os.environ, "PATH": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "thirdshift: claude is not on PATH: install it, or choose another Harness"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "--harness", "goose", "x"],
            "unknown Harness goose: choose one of claude, codex, opencode, gemini, qwen",
        ),
        (["run", "--worktree", "nowhere", "x"], "worktree nowhere is not a folder"),
        (["run", "--kind", "../up", "x"], "session kind '../up' is not a plain name"),
        (["run", "--stop-grace", "soon", "x"], "argument --stop-grace: 'soon' is not a duration"),
        (["run", "--stop-grace", "-1", "x"], "argument --stop-grace: '-1' must be a finite"),
        (["run", "--stop-grace", "nan", "x"], "argument --stop-grace: 'nan' must be a finite"),
        (["run", "--stop-grace", "inf", "x"], "argument --stop-grace: 'inf' must be a finite"),
        (["run", "--wait-for-limits", "soon", "x"], "'soon' is not a duration"),
        (["run", "--idle-timeout=-1m", "x"], "'-1m' is not a duration"),
        (["run", "--timeout", "forever", "x"], "'forever' is not a duration"),
        (["run", "--wait-for-limits", "-5", "x"], "'-5' must be a finite duration"),
        (["inspect", "some.jsonl", "--", "x"], "inspect takes no arguments after --"),
        (["run", "--skills", "nowhere", "x"], "skills folder nowhere is not a folder"),
        (["run", "   "], "the prompt is empty"),
        (["run", "--bogus"], "unrecognized arguments: --bogus"),
        (["run", "--containment", "jail", "x"], "argument --containment: invalid choice: 'jail'"),
        (["launch"], "invalid choice: 'launch'"),
        (["run", "--logs", "", "x"], "argument --logs: an empty path names no folder"),
        (["run", "--worktree", "", "x"], "argument --worktree: an empty path names no folder"),
        (["run", "--skills", "", "x"], "argument --skills: an empty path names no folder"),
        (["run", "--name", "", "x"], "argument --name: an empty name"),
        (["run", "--notify-command", "'mail", "x"], "cannot be split: No closing quotation"),
        (["run", "--notify-command", "", "x"], "--notify-command is empty"),
        (["run", "--notify-command", "nope-xyz -s x", "x"], "nope-xyz is not a program on PATH"),
        (
            ["worker", "--address", "127.0.0.1:1", "--task-queue", "q", "--notify-command", " "],
            "--notify-command is empty",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = thirdshift(*args, cwd=tmp_path, stdin="")

    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("thirdshift: ")
    assert message in line


def test_no_command_prints_help_and_exits_2(tmp_path: Path) -> None:
    done = thirdshift(cwd=tmp_path)

    assert done.returncode == 2
    assert "run" in done.stderr
    assert "inspect" in done.stderr


def test_the_demo_shows_a_resume_with_a_fake_agent(tmp_path: Path) -> None:
    done = thirdshift("demo", "--folder", str(tmp_path / "demo"), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "FAKE" in done.stdout
    assert "Re-ran the test suite in the foreground: 3 passed." in done.stdout
    assert "killed background work:\n  Run the test suite" in done.stdout
    assert (
        "implement: the session ended with a background task still running (Run the test suite), "
        "which was killed; resuming it once"
    ) in done.stderr
    assert len(list((tmp_path / "demo" / "logs").glob("*.jsonl"))) == 2


@pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")
def test_the_demo_runs_sandboxed_and_its_records_say_so(tmp_path: Path) -> None:
    done = thirdshift("demo", "--sandbox", "--folder", str(tmp_path / "demo"), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "Re-ran the test suite in the foreground: 3 passed." in done.stdout
    records = sorted((tmp_path / "demo" / "logs").glob("*.record.json"))
    assert [json.loads(record.read_text())["sandbox"] for record in records] == [True, True]


def test_the_demo_of_a_fleet_sandboxes_as_a_worker_does_so_it_refuses_sandbox(
    tmp_path: Path,
) -> None:
    done = thirdshift("demo", "--fleet", "--sandbox", cwd=tmp_path)

    assert done.returncode == 2
    assert "demo --fleet sandboxes its sessions as a worker does: drop --sandbox" in done.stderr


def test_the_demo_quotes_the_path_it_tells_you_to_copy(tmp_path: Path) -> None:
    folder = tmp_path / "a demo's folder"

    done = thirdshift("demo", "--folder", str(folder), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "$ thirdshift inspect" in line]
    path = shlex.split(line.split("$ thirdshift inspect ", 1)[1])
    assert len(path) == 1
    assert Path(path[0]).parent == folder / "logs"


def test_the_demo_in_a_folder_that_is_not_empty_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "demo" / "repo").mkdir(parents=True)

    done = thirdshift("demo", "--folder", str(tmp_path / "demo"), cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr == (
        f"thirdshift: demo --folder {tmp_path / 'demo'} must be a new or empty folder "
        "(the demo makes its repository and logs there)\n"
    )


def test_the_help_names_every_built_in_cli(tmp_path: Path) -> None:
    done = thirdshift("--help", cwd=tmp_path)

    for cli in ("claude -p", "codex exec", "opencode run", "gemini", "qwen"):
        assert cli in " ".join(done.stdout.split())


def spawn_run(tmp_path: Path, *args: str) -> pexpect.spawn[str]:
    return pexpect.spawn(
        THIRDSHIFT,
        ["run", "--logs", str(tmp_path / "logs"), "--stop-grace", "1", *args, "work"],
        cwd=str(tmp_path),
        env=dict(os.environ),
        encoding="utf-8",
        timeout=30,
    )


def finish(child: pexpect.spawn[str]) -> int:
    child.expect("thirdshift: interrupted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


@pytest.mark.parametrize(
    ("harness", "ignore", "signals"),
    [
        ("claude", (), ["SIGTERM"]),
        ("codex", (), ["SIGINT"]),
        ("codex", ("SIGINT",), ["SIGINT", "SIGTERM"]),
    ],
    ids=["claude", "codex", "codex-ignoring-sigint"],
)
def test_ctrl_c_stops_the_session_with_the_harness_signals(
    fake_cli_on_path: FakeCLIs,
    tmp_path: Path,
    harness: str,
    ignore: tuple[str, ...],
    signals: list[str],
) -> None:
    cli = fake_cli_on_path.harness(harness)
    cli.script(steps.background("sleep 300"), steps.hang(ignore=ignore))
    child = spawn_run(tmp_path, "--harness", harness)
    cli.wait_for_call(0, hanging=True, timeout=30)

    child.sendintr()

    assert finish(child) == 130
    call = cli.wait_for_call(0, ended=True)
    assert call.signals == signals
    assert not call.running
    assert not [process for process in call.started if process.running]
    assert len(cli.calls) == 1


def test_ctrl_c_again_kills_the_session_without_waiting_out_the_grace(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # A CLI deaf to its stop signals, and a minute of grace for each: only the kill ends it.
    fake_cli_on_path.claude.script(steps.hang(ignore=["SIGTERM", "SIGINT"]))
    child = spawn_run(tmp_path, "--stop-grace", "60")
    fake_cli_on_path.claude.wait_for_call(0, hanging=True, timeout=30)

    child.sendintr()
    child.expect_exact("thirdshift: stopping the session (Ctrl-C again to kill it now)")
    child.sendintr()
    child.expect_exact("thirdshift: killing the session now")

    assert finish(child) == 130  # within spawn_run's 30 s, not after the 60 s grace
    (call,) = fake_cli_on_path.claude.calls  # killed: it could not record its own end
    assert not call.running


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["SIGTERM", "SIGHUP"]
)
def test_sigterm_or_sighup_to_thirdshift_stops_the_session_too_and_says_which(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    fake_cli_on_path.claude.script(steps.hang())
    child = spawn_run(tmp_path)
    fake_cli_on_path.claude.wait_for_call(0, hanging=True, timeout=30)

    child.kill(signum)

    assert finish(child) == code  # 128 + the signal, as a shell shows it; not Ctrl-C's 130
    assert fake_cli_on_path.claude.wait_for_call(0, ended=True).signals == ["SIGTERM"]


def test_a_logs_folder_that_cannot_be_created_is_one_line_and_exit_2(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # A name too long for the file system fails mkdir and also stat, as EACCES does for an
    # unprivileged user's /root/x/logs: the check in within's finally must not hide the cause.
    logs = tmp_path / ("x" * 300) / "logs"

    done = thirdshift("run", "--logs", str(logs), "hi", cwd=tmp_path)

    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"thirdshift: could not create the logs folder {logs}: File name too long"
    ]
    assert "Traceback" not in done.stderr
    assert fake_cli_on_path.claude.calls == []


def test_run_in_the_root_folder_names_its_logs_root(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))

    done = thirdshift("run", "--worktree", "/", "--logs", str(tmp_path), "hi", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("root-*-session.jsonl"))) == 1


HOSTILE_FINAL = "done \x1b]52;c;ZXZpbA==\x07 \u202eevil key sk-abcdefghijklmnopqrstuvwx"


def test_the_final_message_goes_raw_into_a_pipe(fake_cli_on_path: FakeCLIs, tmp_path: Path) -> None:
    fake_cli_on_path.claude.script(steps.say(HOSTILE_FINAL))

    done = thirdshift("run", "--logs", str(tmp_path / "logs"), "go", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout == HOSTILE_FINAL + "\n"  # the product's output, byte for byte


def test_the_final_message_is_escaped_on_a_terminal(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say(HOSTILE_FINAL))
    child = pexpect.spawn(
        THIRDSHIFT,
        ["run", "--logs", str(tmp_path / "logs"), "go"],
        cwd=str(tmp_path),
        env=dict(os.environ),
        encoding="utf-8",
        timeout=30,
    )

    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 0
    assert child.before is not None
    assert "done \\x1b]52;c;ZXZpbA==\\x07 \\u202eevil key sk-abcdefghijklmnopqrstuvwx" in (
        child.before
    )
    assert "\x1b" not in child.before
    assert "\u202e" not in child.before


def test_run_json_is_one_line_of_printable_ascii_whatever_the_final_message_holds(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # A lone surrogate (no encoding can write it), a C1 CSI, RLO and a line separator.
    hostile = "bad \\ud800 \\u009b31m \\u202e \\u2028 end"
    fake_cli_on_path.codex.script(
        cli_steps.raw(
            '{"type":"item.completed","item":{"id":"m1","type":"agent_message",'
            f'"text":"{hostile}"}}}}\n'
        )
    )

    done = subprocess.run(
        [THIRDSHIFT, "run", "--harness", "codex", "--logs", str(tmp_path / "logs"), "--json", "go"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stdout.count(b"\n") == 1
    assert all(0x20 <= byte < 0x7F for byte in done.stdout.rstrip(b"\n"))
    assert json.loads(done.stdout)["final_message"] == json.loads(f'"{hostile}"')


@pytest.mark.parametrize(
    ("prompt_args", "stdin", "warned"),
    [
        (["first line\nsecond line"], None, True),
        (["one line, with a newline after it\n"], None, False),
        (["-"], "first line\nsecond line\n", False),
    ],
    ids=["multi-line-argument", "one-line-argument", "stdin"],
)
def test_a_multi_line_prompt_argument_is_warned_about_once(
    fake_cli_on_path: FakeCLIs,
    tmp_path: Path,
    prompt_args: list[str],
    stdin: str | None,
    warned: bool,
) -> None:
    fake_cli_on_path.claude.script(steps.say("ok"))

    done = thirdshift(
        "run", "--logs", str(tmp_path / "logs"), *prompt_args, cwd=tmp_path, stdin=stdin
    )

    assert done.returncode == 0, done.stderr
    warning = (
        "thirdshift: warning: a prompt given as an argument shows in ps to every user of this "
        "machine; give a long one on stdin instead (thirdshift run - < prompt.md)"
    )
    assert done.stderr.splitlines().count(warning) == (1 if warned else 0)


# Two processes started together take their command stamps a few milliseconds apart, which
# crosses a second boundary now and then: such a pair tests nothing, and is run again.
PAIR_ATTEMPTS = 10


def test_two_runs_in_the_same_second_write_two_logs_and_truncate_neither(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    for attempt in range(PAIR_ATTEMPTS):
        logs = tmp_path / f"logs-{attempt}"
        prompts = [f"first of pair {attempt}", f"second of pair {attempt}"]
        for answer in ("one", "two"):  # to the calls in the order they come, not the prompts'
            fake_cli_on_path.claude.script(steps.run("echo hi"), steps.say(f"answer {answer}"))
        children = [
            subprocess.Popen(
                [THIRDSHIFT, "run", "--logs", str(logs), "--name", "repo", "--json", prompt],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for prompt in prompts
        ]
        outputs = [child.communicate(timeout=60) for child in children]
        assert [child.returncode for child in children] == [0, 0], outputs
        written = sorted(path.name for path in logs.iterdir())
        stamps = {name.removeprefix("repo-").split("-session", 1)[0] for name in written}
        if len(stamps) == 1:
            break
    else:
        pytest.fail(f"no pair of runs started within one second in {PAIR_ATTEMPTS} attempts")

    (stamp,) = stamps
    assert written == [
        f"repo-{stamp}-session-2.jsonl",
        f"repo-{stamp}-session-2.record.json",
        f"repo-{stamp}-session-2.stderr",
        f"repo-{stamp}-session.jsonl",
        f"repo-{stamp}-session.record.json",
        f"repo-{stamp}-session.stderr",
    ]
    calls = {call.stdin: call for call in fake_cli_on_path.claude.calls}
    records = [json.loads(stdout)["records"] for stdout, _ in outputs]
    for prompt, (record,) in zip(prompts, records, strict=True):
        # Each run's log holds its own CLI's stream, whole, whichever created its file first.
        assert Path(record["log"]).read_bytes() == calls[prompt].stdout_path.read_bytes()
        assert record["final_message"] in ("answer one", "answer two")
    assert {record["final_message"] for (record,) in records} == {"answer one", "answer two"}
    assert {record["log"] for (record,) in records} == {
        str(logs / f"repo-{stamp}-session.jsonl"),
        str(logs / f"repo-{stamp}-session-2.jsonl"),
    }


def test_run_json_gives_every_session_record_with_its_real_log(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("pytest -x"), steps.say("started the tests"))
    fake_cli_on_path.claude.script(steps.run("pytest -x"), steps.say("all green"))
    logs = tmp_path / "logs"

    done = thirdshift(
        *("run", "--logs", str(logs), "--name", "repo", "--kind", "implement", "--json", "fix it"),
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["final_message"], out["failure"]) == ("all green", None)
    first, resume = out["records"]
    assert out["endings"] == [
        {"kind": "implement", "killed": ["pytest -x"], "resume": False, "log": first["log"]}
    ]
    assert (first["kind"], first["killed"], first["final_message"]) == (
        "implement",
        ["pytest -x"],
        "started the tests",
    )
    assert (resume["kind"], resume["killed"], resume["final_message"]) == (
        "implement-resume",
        [],
        "all green",
    )
    assert resume["session_id"] == first["session_id"] == "fake-session-1"
    names = [Path(record["log"]).name for record in out["records"]]
    stamp = names[0].removeprefix("repo-").removesuffix("-implement.jsonl")
    assert re.fullmatch(r"\d{8}T\d{6}[+-]\d{4}", stamp), names
    assert names[1] == f"repo-{stamp}-implement-resume.jsonl"
    for record, call in zip(out["records"], fake_cli_on_path.claude.calls, strict=True):
        assert Path(record["log"]).parent == logs
        assert Path(record["log"]).read_bytes() == call.stdout_path.read_bytes()
        assert record["failure"] is None
        assert record["usage"]["turns"] >= 1
        assert record["duration"] >= 0
        assert datetime.fromisoformat(record["started_at"]).tzinfo is not None
        assert record["containment"] == "cgroup"  # auto, as root on a cgroup v2 machine


@pytest.mark.parametrize("containment", ["cgroup", "namespace", "scan"])
def test_run_under_a_forced_containment_says_so_in_its_json(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, containment: str
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))

    done = thirdshift(
        *("run", "--logs", str(tmp_path / "logs"), "--containment", containment, "--json", "x"),
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert [r["containment"] for r in json.loads(done.stdout)["records"]] == [containment]


def test_a_prompt_typed_at_a_terminal_is_asked_for_and_ctrl_c_there_is_one_line(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    child = pexpect.spawn(
        THIRDSHIFT,
        ["run", "--logs", str(tmp_path / "logs")],
        cwd=str(tmp_path),
        env=dict(os.environ),
        encoding="utf-8",
        timeout=30,
    )
    child.expect_exact("thirdshift: type the prompt, then Ctrl-D on a line of its own")

    child.sendintr()

    assert finish(child) == 130
    assert child.before is not None
    assert "Traceback" not in child.before
    assert fake_cli_on_path.claude.calls == []


def test_a_prompt_typed_at_a_terminal_ends_with_ctrl_d(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("typed and done"))
    child = pexpect.spawn(
        THIRDSHIFT,
        ["run", "--logs", str(tmp_path / "logs")],
        cwd=str(tmp_path),
        env=dict(os.environ),
        encoding="utf-8",
        timeout=30,
    )
    child.expect_exact("thirdshift: type the prompt, then Ctrl-D on a line of its own")

    child.sendline("fix the bug")
    child.sendeof()

    child.expect_exact("typed and done")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake_cli_on_path.claude.calls[0].stdin == "fix the bug\n"


def test_durations_are_taken_by_stop_grace_too(fake_cli_on_path: FakeCLIs, tmp_path: Path) -> None:
    fake_cli_on_path.claude.script(steps.say("ok"))

    done = thirdshift(
        "run", "--logs", str(tmp_path / "logs"), "--stop-grace", "2s", "go", cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_run_json_still_prints_one_object_when_interrupted(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("pytest -x"), steps.say("started the tests"))
    fake_cli_on_path.claude.script(steps.hang())  # the Resume hangs until stopped
    child = subprocess.Popen(
        [THIRDSHIFT, "run", "--logs", str(tmp_path / "logs"), "--json", "fix it"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fake_cli_on_path.claude.wait_for_call(1, hanging=True, timeout=30)

    child.send_signal(signal.SIGTERM)
    stdout, stderr = child.communicate(timeout=60)

    assert child.returncode == 143, stderr
    # No terminal to press Ctrl-C at: the line names what came, and what a second one does.
    assert "thirdshift: stopping the session on SIGTERM (a second signal kills it now)\n" in (
        stderr
    )
    assert "Ctrl-C" not in stderr
    out = json.loads(stdout)
    interrupted = {
        "type": "Interrupted",
        "message": "interrupted",
        "retry_at": None,
        "exit_code": None,
        "signal": None,
        "session_id": "fake-session-1",  # the id to continue the stopped Resume by
    }
    assert out["failure"] == interrupted
    assert out["final_message"] is None
    first, resume = out["records"]
    assert (first["kind"], first["killed"]) == ("session", ["pytest -x"])
    # The Resume was stopped: its record says so.
    assert resume["kind"] == "session-resume"
    assert resume["failure"] == interrupted
    assert (
        Path(first["log"]).read_bytes() == fake_cli_on_path.claude.calls[0].stdout_path.read_bytes()
    )


CAPTURE = (
    Path(__file__).parent.parent / "tests" / "transcripts" / "claude-bg-resume" / "stdout.jsonl"
)


@pytest.mark.parametrize(
    "args", [["inspect", str(CAPTURE)], ["inspect", "--json", str(CAPTURE)]], ids=["text", "json"]
)
def test_output_into_a_pipe_closed_early_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    child = subprocess.Popen(
        [THIRDSHIFT, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None
    child.stdout.close()  # before it wrote a byte: every write of its output finds no reader

    _, stderr = child.communicate(timeout=60)

    assert child.returncode == 141  # as a program killed by SIGPIPE, the way cat ends
    assert stderr == b""


def test_inspect_of_a_large_log_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    # Its progress lines are printed while the log is still being read: once said to be a
    # log that could not be read ("cannot read …: Broken pipe", exit 2).
    init = {"type": "system", "subtype": "init", "session_id": "s-1", "cwd": "/w", "model": "m"}
    lines = [json.dumps(init)]
    for number in range(5000):
        command = {"command": f"echo {number} {'x' * 60}"}
        use = {"type": "tool_use", "id": f"t{number}", "name": "Bash", "input": command}
        message = {"id": f"m{number}", "role": "assistant", "content": [use]}
        lines.append(json.dumps({"type": "assistant", "message": message, "session_id": "s-1"}))
    log = tmp_path / "big.jsonl"
    log.write_text("\n".join(lines) + "\n")
    child = subprocess.Popen(
        [THIRDSHIFT, "inspect", str(log)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    child.stdout.close()

    _, stderr = child.communicate(timeout=60)

    assert (child.returncode, stderr) == (141, b"")


def test_run_into_a_pipe_closed_early_still_runs_the_session(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("nobody reads this"))
    child = subprocess.Popen(
        [THIRDSHIFT, "run", "--logs", str(tmp_path / "logs"), "--json", "go"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    child.stdout.close()

    _, stderr = child.communicate(timeout=60)

    assert child.returncode == 141
    assert "Traceback" not in stderr
    assert "session: session ended after" in stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--harness", "gemini", "--effort", "high"], "gemini has no effort setting"),
        (
            ["--harness", "opencode", "--model", "sonnet"],
            "opencode names a model as provider/model",
        ),
        (["--logs", "afile"], "logs folder afile is not a folder"),
        (["--logs", "open"], "refusing to write Session logs to open: group or others may write"),
        (["--skills", "skills"], "skill folder skills/deploy has no SKILL.md (it has skill.md)"),
    ],
)
def test_a_configuration_error_found_on_the_way_exits_2_and_logs_nothing(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "afile").write_text("")
    (tmp_path / "open").mkdir(mode=0o777)
    (tmp_path / "open").chmod(0o777)
    (tmp_path / "skills" / "deploy").mkdir(parents=True)
    (tmp_path / "skills" / "deploy" / "skill.md").write_text("a typo")

    done = thirdshift("run", *args, "hi", cwd=tmp_path)

    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"thirdshift: {message}")
    assert "logging the session to" not in done.stderr  # no log was written
    assert fake_cli_on_path.claude.calls == []


@pytest.mark.parametrize(("closed", "code"), [("0<&-", 0), ("2>&-", 0), (">&-", 141)])
def test_a_closed_standard_descriptor_runs_the_session_the_same(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, closed: str, code: int
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))
    logs = tmp_path / "logs"

    done = subprocess.run(  # a daemon's way of starting programs, through sh's redirection
        ["/bin/sh", "-c", f'exec "$0" "$@" {closed}', THIRDSHIFT, "run", "--logs", str(logs), "hi"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ("" if closed == ">&-" else "done\n")
    (log,) = logs.glob("*.jsonl")
    assert log.read_bytes() == fake_cli_on_path.claude.calls[0].stdout_path.read_bytes()


def test_inspect_into_a_closed_stdout_ends_quietly_with_141(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))
    thirdshift("run", "--logs", str(tmp_path / "logs"), "hi", cwd=tmp_path)
    (log,) = (tmp_path / "logs").glob("*.jsonl")

    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$0" "$@" >&-', THIRDSHIFT, "inspect", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (done.returncode, done.stderr) == (141, "")


def test_a_notify_command_gets_each_event_as_a_json_line_on_its_stdin(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(fake.fail_turn("tool crashed"))
    events = tmp_path / "events.jsonl"
    # Split as a shell would, run without one: the quoted script is one argument.
    keep = f"import sys; open({str(events)!r}, 'a').write(sys.stdin.read())"
    command = shlex.join([sys.executable, "-c", keep])

    done = thirdshift(
        "run", "--logs", str(tmp_path / "logs"), "--notify-command", command, "go", cwd=tmp_path
    )

    assert done.returncode == 1, done.stderr
    failed, finished = (json.loads(line) for line in events.read_text().splitlines())
    session_id = fake_cli_on_path.claude.calls[0].session_id
    assert failed == {
        "event": "failed",
        "run": tmp_path.name,
        "kind": "session",
        "session_id": session_id,
        "failure": {"type": "SessionFailed", "message": failed["failure"]["message"]},
    }
    assert failed["failure"]["message"].startswith("claude exited 1: tool crashed")
    assert finished == {**failed, "event": "finished", "sessions": 1}
    assert done.stdout == ""  # the command's output never reaches run's own
