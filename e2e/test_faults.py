"""Faults and bad input, end to end: each ends in a clear error or a clean success, losing nothing.

Each case asserts its outcome, the exact error text where one is raised, that the Session log
holds every byte the CLI wrote to stdout, and (with the autouse ``no_process_left`` fixture, and
the fakes' own records) that no process the test started is left.

Already covered elsewhere, and not repeated here:

- with the toy CLI (e2e/test_machine.py): a CLI not on PATH or not executable by name, a
  missing worktree, a log folder that cannot be created, a non-zero exit with a stderr line,
  death by SIGKILL mid-line, stdout closed early, a grandchild holding stdout, an escapee and a
  daemon, invalid UTF-8 and NUL bytes, an interrupt of a hanging session;
- with the fake CLIs (e2e/test_sessions_e2e.py): Codex's exact failure texts (SIGKILL
  included), a grandchild holding stdout, and a Codex escapee and daemon.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from sessionkit import (
    CHOICES,
    IDS,
    InThread,
    alive,
    assert_logged_exactly,
    every_pid,
    log_of,
    still_running,
)

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Choice,
    Interrupted,
    LaterStepFailed,
    Logs,
    SessionFailed,
    Sessions,
    ThirdshiftError,
    Watchdogs,
    claude,
    codex,
    interrupts,
)
from thirdshift._machine.follow import MAX_PARSED_LINE
from thirdshift.harness._builtin.claude import ClaudeHarness, ClaudeReader
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps


def implement(
    choice: Choice,
    worktree: Path,
    logs_dir: Path,
    lines: list[str] | None = None,
    **options: object,
) -> str | None:
    sink = lines if lines is not None else []
    with Sessions.within(
        Logs(logs_dir, "repo"),
        worktree,
        choice,
        progress=sink.append,
        **options,  # type: ignore[arg-type]
    ) as sessions:
        return sessions.run_to_final_message("implement", "Make the tests pass.")


# Before anything is spawned: the CLI, the worktree, the log folder


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
def test_a_cli_missing_from_path_is_named_and_nothing_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: Choice
) -> None:
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))

    with pytest.raises(ThirdshiftError) as raised:
        implement(choice, tmp_path, tmp_path / "logs")

    name = choice.harness.name
    assert str(raised.value) == f"{name} is not on PATH: install it, or choose another Harness"
    assert not (tmp_path / "logs").exists()


def test_a_cli_that_is_not_executable_is_named_and_never_run(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli_on_path.claude.path.chmod(0o644)
    monkeypatch.setenv("PATH", str(fake_cli_on_path.bin_dir))

    with pytest.raises(ThirdshiftError) as raised:
        implement(claude(), tmp_path, tmp_path / "logs")

    assert (
        str(raised.value) == f"claude on PATH at {fake_cli_on_path.claude.path} is not executable"
    )
    assert fake_cli_on_path.claude.calls == []
    assert not (tmp_path / "logs").exists()


def test_a_cli_that_cannot_be_started_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text("#!/nonexistent/interpreter\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    lines: list[str] = []

    with pytest.raises(ThirdshiftError) as raised:
        implement(claude(), tmp_path, tmp_path / "logs", lines)

    assert str(raised.value) == f"could not start {program}: No such file or directory"
    assert log_of(tmp_path / "logs", "implement").read_bytes() == b""
    assert not [line for line in lines if "session ended" in line]


@pytest.mark.parametrize("with_skills", [False, True], ids=["plain", "with-skills"])
def test_a_missing_worktree_is_named_and_not_created(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, with_skills: bool
) -> None:
    skills = tmp_path / "skills"
    (skills / "ship").mkdir(parents=True)
    (skills / "ship" / "SKILL.md").write_text("# ship\n")
    worktree = tmp_path / "gone"

    with pytest.raises(ThirdshiftError) as raised:
        implement(claude(), worktree, tmp_path / "logs", skills=skills if with_skills else None)

    assert str(raised.value) == f"worktree {worktree} is not a folder"
    assert not worktree.exists()
    assert fake_cli_on_path.claude.calls == []


def test_a_worktree_that_is_a_file_is_named(fake_cli_on_path: FakeCLIs, tmp_path: Path) -> None:
    worktree = tmp_path / "file"
    worktree.write_text("not a folder")

    with pytest.raises(ThirdshiftError) as raised:
        implement(claude(), worktree, tmp_path / "logs")

    assert str(raised.value) == f"worktree {worktree} is not a folder"
    assert fake_cli_on_path.claude.calls == []


def test_a_log_folder_that_cannot_be_created_is_named_and_nothing_runs(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    (tmp_path / "taken").write_text("a file where a folder should be")
    logs_dir = tmp_path / "taken" / "logs"

    with pytest.raises(ThirdshiftError) as raised:
        implement(claude(), tmp_path, logs_dir)

    assert str(raised.value) == (
        f"could not create the logs folder {log_of(logs_dir, 'implement').parent}: "
        "part of its path is not a folder"
    )
    assert fake_cli_on_path.claude.calls == []


# The CLI misbehaves


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
@pytest.mark.parametrize(
    ("stderr", "suffix"),
    [(None, ""), ("fatal: no model", ": fatal: no model")],
    ids=["quiet", "stderr"],
)
def test_a_non_zero_exit_with_nothing_on_stdout(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice, stderr: str | None, suffix: str
) -> None:
    cli = fake_cli_on_path.harness(choice.harness.name)
    script = [cli_steps.no_events(), *([fake.stderr(stderr)] if stderr else []), steps.exit(3)]
    cli.script(*script)

    with pytest.raises(SessionFailed) as failed:
        implement(choice, tmp_path, tmp_path / "logs")

    assert str(failed.value) == f"{choice.harness.name} exited 3{suffix}"
    assert failed.value.exit_code == 3
    (call,) = cli.calls
    assert call.stdout == b""
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
def test_death_by_sigkill_mid_line_keeps_the_partial_line_and_leaves_nothing(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice
) -> None:
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(
        steps.background("sleep 300"),
        steps.say("working"),
        cli_steps.die("SIGKILL", partial_line='{"type":"assistant","message":{"content":[{"ty'),
    )
    lines: list[str] = []

    with pytest.raises(SessionFailed) as failed:
        implement(choice, tmp_path, tmp_path / "logs", lines)

    assert str(failed.value) == f"{choice.harness.name} exited by signal SIGKILL"
    assert (failed.value.exit_code, failed.value.signal) == (None, signal.SIGKILL)
    (call,) = cli.calls  # a failed session is not resumed
    assert call.stdout.endswith(b'\n{"type":"assistant","message":{"content":[{"ty')
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    # The crash left its background work behind; the supervisor stopped it.
    assert still_running(call.started_pids) == []
    assert not [line for line in lines if "background" in line]


def test_stdout_closed_early_while_the_cli_runs_on_waits_for_its_exit(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(
        cli_steps.no_events(),
        cli_steps.raw(b'{"type":"before"}\n'),
        cli_steps.close_stdout(),
        fake.sleep(0.5),
        cli_steps.raw(b'{"type":"after, to nowhere"}\n'),
        steps.exit(4),
    )

    with pytest.raises(SessionFailed) as failed:
        implement(claude(), tmp_path, tmp_path / "logs")

    assert str(failed.value) == "claude exited 4"
    (call,) = fake_cli_on_path.claude.calls
    assert (call.exit_code, call.signals) == (4, [])  # it ran to its own exit, unstopped
    # The fake's copy keeps what it wrote after closing stdout; only the first line got out.
    assert call.stdout == b'{"type":"before"}\n{"type":"after, to nowhere"}\n'
    assert log_of(tmp_path / "logs", "implement").read_bytes() == b'{"type":"before"}\n'


def test_a_line_over_the_parse_cap_is_logged_but_not_parsed_and_the_result_still_counts(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # A Bash tool use that would give a progress line, were it parsed.
    fake_cli_on_path.claude.script(
        cli_steps.raw(
            b'{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash",'
        ),
        cli_steps.raw(b'"input":{"command":"echo '),
        cli_steps.raw(b"x", repeat=MAX_PARSED_LINE + 1),
        cli_steps.raw(b'"}}]}}\n'),
        steps.say("the final message"),
    )
    lines: list[str] = []

    final = implement(claude(), tmp_path, tmp_path / "logs", lines)

    assert final == "the final message"
    (call,) = fake_cli_on_path.claude.calls
    log = log_of(tmp_path / "logs", "implement")
    assert log.stat().st_size > MAX_PARSED_LINE
    assert_logged_exactly(log, call)
    assert lines[1] == "implement: session started"
    assert lines[2].startswith("implement: session ended after ")
    assert len(lines) == 3  # no "$ echo xxx…" line: the huge line was never parsed


def test_a_line_of_too_much_json_structure_is_logged_but_not_parsed(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # 600 kB, well under the parse cap, but each {} would be a dict of its own, parsed.
    fake_cli_on_path.claude.script(
        cli_steps.raw(
            b'{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash",'
        ),
        cli_steps.raw(b'"input":{"command":"echo dense","padding":['),
        cli_steps.raw(b"{},", repeat=200_000),
        cli_steps.raw(b"{}]}}]}}\n"),
        steps.say("the final message"),
    )
    lines: list[str] = []

    final = implement(claude(), tmp_path, tmp_path / "logs", lines)

    assert final == "the final message"
    (call,) = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert "implement: $ echo dense" not in lines
    assert lines[1] == "implement: session started"


class LineRecordingReader(ClaudeReader):
    """Claude's reader, keeping every line it is fed (a test's window on the follow)."""

    fed: ClassVar[list[str]] = []

    def feed(self, line: str) -> list[str]:
        self.fed.append(line)
        return super().feed(line)


@dataclass(frozen=True)
class LineRecordingClaude(ClaudeHarness):
    def reader(self, worktree: Path) -> ClaudeReader:
        return LineRecordingReader(worktree)


def test_blank_lines_are_logged_byte_for_byte_and_never_reach_the_reader(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fed: list[str] = []
    monkeypatch.setattr(LineRecordingReader, "fed", fed)
    fake_cli_on_path.claude.script(
        cli_steps.raw(b"\n", repeat=1 << 20),
        steps.run("echo hi"),
        cli_steps.raw(b" \t\r\n", repeat=100_000),
        cli_steps.raw(b"\x0b\x0c \n\r\n\n"),
        steps.say("the final message"),
        cli_steps.raw(b"\n\n   "),  # blank to the end, with no final newline
    )
    lines: list[str] = []

    final = implement(Choice(LineRecordingClaude()), tmp_path, tmp_path / "logs", lines)

    assert final == "the final message"
    (call,) = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert fed
    assert all(line.strip() for line in fed)
    assert "implement: $ echo hi" in lines


def test_short_lines_that_hold_no_json_object_are_logged_and_never_reach_the_reader(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 64 MiB of `x` lines, each handed to the reader to be refused, cost 10 s of CPU.
    fed: list[str] = []
    monkeypatch.setattr(LineRecordingReader, "fed", fed)
    fake_cli_on_path.claude.script(
        cli_steps.raw(b"x\n", repeat=1 << 18),
        steps.run("echo hi"),
        cli_steps.raw(b"{\n}\n{x\n x}\n", repeat=10_000),
        steps.say("the final message"),
    )
    lines: list[str] = []

    final = implement(Choice(LineRecordingClaude()), tmp_path, tmp_path / "logs", lines)

    assert final == "the final message"
    (call,) = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert fed
    assert all(line.startswith("{") and line.endswith("}") for line in fed)
    assert "implement: $ echo hi" in lines


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
def test_invalid_utf8_nul_bytes_and_no_final_newline(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice
) -> None:
    if choice.harness.name == "claude":
        start = b'{"type":"system","subtype":"init","session_id":"s-1","cwd":"/w"}\n'
        end = b'{"type":"result","subtype":"success","is_error":false,"result":"caf\xc3\xa9 done"}'
    else:
        start = b'{"type":"thread.started","thread_id":"t-1"}\n'
        end = (
            b'{"type":"item.completed","item":{"id":"i1","type":"agent_message",'
            b'"text":"caf\xc3\xa9 done"}}\n{"type":"turn.completed","usage":{}}'
        )
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(
        cli_steps.no_events(),
        cli_steps.raw(start),
        cli_steps.raw(b"\xff\xfe not utf-8 \x00 with a NUL\n"),
        cli_steps.raw(b'{"type":"bogus","text":"\xc3\x28 \x00"}\n'),
        cli_steps.raw(b"\x00\x00\x00\n"),
        cli_steps.raw(end),  # no final newline before the exit
    )
    lines: list[str] = []

    final = implement(choice, tmp_path, tmp_path / "logs", lines)

    assert final == "café done"
    (call,) = cli.calls
    assert call.stdout.endswith(end)
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert lines[1] == "implement: session started"


# Waiting, and what is left behind


@pytest.mark.parametrize(
    "case",
    [
        (codex(), (), ["SIGINT"], 130),
        (claude(), (), ["SIGTERM"], 143),
        (claude(), (signal.SIGTERM,), ["SIGTERM"], None),  # SIGKILLed after the grace
    ],
    ids=["codex", "claude", "claude-ignoring-sigterm"],
)
def test_an_idle_session_is_stopped_promptly_on_interrupt(
    fake_cli_on_path: FakeCLIs,
    tmp_path: Path,
    case: tuple[Choice, tuple[signal.Signals, ...], list[str], int | None],
) -> None:
    choice, ignore, signals, exit_code = case
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(steps.background("sleep 300"), steps.hang(ignore=ignore))
    lines: list[str] = []
    session = InThread(
        lambda: implement(
            choice, tmp_path, tmp_path / "logs", lines, watchdogs=Watchdogs(stop_grace=1.0)
        )
    )
    session.start()
    try:
        cli.wait_for_call(0, hanging=True)
        time.sleep(0.3)  # idle: nothing written for a while
        asked = time.monotonic()
        interrupts.request()
        with pytest.raises(Interrupted) as raised:
            session.outcome(timeout=30)
    finally:
        interrupts.request()  # should the test fail early, still stop the session
        session.join(30)
        interrupts.clear()

    assert str(raised.value) == "interrupted"
    assert session.finished_at is not None
    assert session.finished_at - asked < 20  # only catches a hang; the grace is 1 s
    (call,) = cli.calls
    assert (call.signals, call.exit_code) == (signals, exit_code)
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert still_running(every_pid(call)) == []
    assert not [line for line in lines if "session ended" in line]


def test_claude_leftovers_a_grandchild_an_escapee_ignoring_sigterm_and_a_daemon(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # The Codex twin, and the grandchild alone, are in e2e/test_sessions_e2e.py. Claude's only
    # stop signal is SIGTERM, which the escapee ignores: it takes the SIGKILL after the grace.
    fake_cli_on_path.claude.script(
        cli_steps.grandchild_holds_stdout(120),
        cli_steps.escape_setsid(120),
        cli_steps.daemon(120),
        steps.say("done"),
    )
    fake_cli_on_path.claude.script(steps.say("done in the foreground"))
    started = time.monotonic()

    final = implement(claude(), tmp_path, tmp_path / "logs", watchdogs=Watchdogs(stop_grace=0.5))

    assert final == "done in the foreground"
    assert time.monotonic() - started < 20  # the drain (2 s) and the grace, not the 120 s
    # All three outlived the CLI: work killed as the session ended, named in one Resume.
    call, resume = fake_cli_on_path.claude.calls
    assert resume.resumed == call.session_id
    assert resume.stdin is not None
    assert resume.stdin.count("sleep 120") == 3
    assert [p.what for p in call.started] == [
        "grandchild_holds_stdout",
        "escape_setsid",
        "daemon",
    ]
    assert [pid for pid in call.started_pids if alive(pid)] == []
    assert call.exit_code == 0
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


# The caller's own step fails after killed work


def test_a_later_step_that_raises_after_killed_work_names_the_work_through_the_adapter(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.say("started the tests"))
    fake_cli_on_path.claude.script(steps.background("sleep 301"), steps.say("started them again"))
    lines: list[str] = []

    with (
        pytest.raises(LaterStepFailed) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"), tmp_path, claude(), progress=lines.append
        ) as sessions,
    ):
        assert sessions.run_to_final_message("implement", "go") == "started them again"
        raise RuntimeError("no PR found")

    assert str(raised.value) == (
        "implement session ended with a background task still running (sleep 301), which was "
        "killed, and a later step failed: no PR found"
    )
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert raised.value.endings == (
        "implement session ended with a background task still running (sleep 301), which was "
        "killed",
    )
    first, resume = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), first)
    assert_logged_exactly(log_of(tmp_path / "logs", "implement-resume"), resume)
    assert sessions.last_log == log_of(tmp_path / "logs", "implement-resume")
    assert still_running(every_pid(first) + every_pid(resume)) == []
    assert (
        "implement: the Resume ended with a background task still running (sleep 301), which "
        "was killed; carrying on, as it may have been abandoned"
    ) in lines


def test_a_later_step_after_killed_work_with_no_id_to_resume(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(
        fake.no_session_id(), steps.background("cargo test"), steps.say("started")
    )

    with (
        pytest.raises(LaterStepFailed) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"), tmp_path, codex(), progress=list[str]().append
        ) as sessions,
    ):
        sessions.run("implement", "go")
        raise ValueError("no PR found")

    assert str(raised.value) == (
        "implement session ended with a background task still running (cargo test), which was "
        "killed, and a later step failed: no PR found"
    )
    (call,) = fake_cli_on_path.codex.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert still_running(every_pid(call)) == []


def test_keyboard_interrupt_after_killed_work_passes_through_unwrapped(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(fake.no_session_id(), steps.background("sleep 300"))

    with (
        pytest.raises(KeyboardInterrupt) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"), tmp_path, claude(), progress=list[str]().append
        ) as sessions,
    ):
        sessions.run("implement", "go")
        assert sessions.endings  # killed work is on record...
        raise KeyboardInterrupt

    assert type(raised.value) is KeyboardInterrupt  # ...and still the interrupt is not wrapped
    assert raised.value.__cause__ is None
    (call,) = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert still_running(every_pid(call)) == []


def test_a_line_as_long_as_the_longest_real_ones_is_still_parsed(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Codex's longest lines are about 1 MB: twice that is well within the parse cap.
    fake_cli_on_path.claude.script(
        cli_steps.raw(
            b'{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash",'
        ),
        cli_steps.raw(b'"input":{"command":"echo '),
        cli_steps.raw(b"x", repeat=2_000_000),
        cli_steps.raw(b'"}}]}}\n'),
        steps.say("the final message"),
    )
    lines: list[str] = []

    final = implement(claude(), tmp_path, tmp_path / "logs", lines)

    assert final == "the final message"
    assert [line for line in lines if line.startswith("implement: $ echo xxx")]
