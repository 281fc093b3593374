"""The machine adapter against real processes: logging, failures, draining, stopping."""

from __future__ import annotations

import _thread
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from sessionkit import alive
from toy import Toy, install_toy

from thirdshift import (
    Choice,
    Ended,
    Interrupted,
    SessionFailed,
    ThirdshiftError,
    Watchdogs,
    interrupts,
)
from thirdshift._machine import MachineOutside
from thirdshift._machine.follow import STDERR_KEPT
from thirdshift._machine.launch import SUPERVISOR, launch_argv
from thirdshift._machine.supervisor.protocol import PROBE


def outside_for(
    toy: Toy,
    worktree: Path,
    lines: list[str] | None = None,
    stop_grace: float = 10.0,
    drain: float = 2.0,
) -> MachineOutside:
    sink = lines if lines is not None else []
    return MachineOutside(
        worktree,
        Choice(toy),
        progress=sink.append,
        watchdogs=Watchdogs(stop_grace=stop_grace),
        drain=drain,
    )


def pids_in(pidfile: Path) -> list[int]:
    return [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []


@pytest.mark.usefixtures("toy_on_path")
def test_every_byte_reaches_the_log_and_every_line_the_reader(
    worktree: Path, tmp_path: Path
) -> None:
    toy = Toy(["out:first", "raw:ff00fe0a", "out:FINAL:done", "raw:6e6f206e65776c696e65"])
    lines: list[str] = []
    log = tmp_path / "logs" / "run-session.jsonl"

    ended = outside_for(toy, worktree, lines).run_session("session", None, "the prompt", log)

    assert log.read_bytes() == b"first\n\xff\x00\xfe\nFINAL:done\nno newline"
    assert toy.readers[0].lines == ["first", "\ufffd\x00\ufffd", "FINAL:done", "no newline"]
    assert ended == Ended(session_id=None, killed=(), final_message="done")
    assert lines[:5] == [
        f"logging the session to {log}",
        "session: line first",
        "session: line \ufffd\\x00\ufffd",  # control characters are shown escaped
        "session: line FINAL:done",
        "session: line no newline",
    ]
    assert lines[5].startswith("session: session ended after ")


@pytest.mark.usefixtures("toy_on_path")
def test_the_log_and_the_stderr_sidecar_are_private(worktree: Path, tmp_path: Path) -> None:
    log = tmp_path / "private" / "logs" / "a-session.jsonl"

    outside_for(Toy(["out:x", "err:to stderr"]), worktree).run_session("s", None, "p", log)

    sidecar = tmp_path / "private" / "logs" / "a-session.stderr"
    assert sidecar.read_text() == "to stderr\n"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


@pytest.mark.usefixtures("toy_on_path")
def test_the_prompt_goes_to_stdin_and_the_environment_loses_claudecode(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    toy = Toy(["stdin", "env:CLAUDECODE", "env:PWD_CHECK"])
    monkeypatch.setenv("PWD_CHECK", "kept")

    outside_for(toy, worktree).run_session("s", None, "line one\nline two", tmp_path / "l.jsonl")

    assert toy.readers[0].lines == ["line one|line two", "<unset>", "kept"]


@pytest.mark.usefixtures("toy_on_path")
def test_a_large_prompt_to_a_cli_that_never_reads_stdin_does_not_deadlock(
    worktree: Path, tmp_path: Path
) -> None:
    toy = Toy(["out:FINAL:ignored stdin"])

    ended = outside_for(toy, worktree).run_session("s", None, "x" * 4_000_000, tmp_path / "l")

    assert ended.final_message == "ignored stdin"


@pytest.mark.usefixtures("toy_on_path")
def test_a_non_zero_exit_fails_with_the_last_stderr_line(worktree: Path, tmp_path: Path) -> None:
    log = tmp_path / "l.jsonl"
    toy = Toy(["err:first problem", "err:", "err:the real problem", "err:  ", "exit:3"])

    with pytest.raises(SessionFailed) as failed:
        outside_for(toy, worktree).run_session("s", None, "p", log)

    assert str(failed.value) == "toy exited 3: the real problem"
    assert failed.value.exit_code == 3
    assert failed.value.signal is None
    assert failed.value.diagnostic == "the real problem"
    assert failed.value.log == log


@pytest.mark.usefixtures("toy_on_path")
def test_the_readers_error_wins_over_stderr(worktree: Path, tmp_path: Path) -> None:
    toy = Toy(["out:FAIL:stream disconnected", "err:noise"])

    with pytest.raises(SessionFailed, match=r"^toy's turn failed: stream disconnected$"):
        outside_for(toy, worktree).run_session("s", None, "p", tmp_path / "l.jsonl")


@pytest.mark.usefixtures("toy_on_path")
def test_death_by_a_signal_mid_line_is_reported_and_the_partial_line_kept(
    worktree: Path, tmp_path: Path
) -> None:
    log = tmp_path / "l.jsonl"
    toy = Toy(["out:whole", "raw:7b2268616c66", "die:SIGKILL"])

    with pytest.raises(SessionFailed) as failed:
        outside_for(toy, worktree).run_session("s", None, "p", log)

    assert str(failed.value) == "toy exited by signal SIGKILL"
    assert failed.value.signal == signal.SIGKILL
    assert failed.value.exit_code is None
    assert log.read_bytes() == b'whole\n{"half'


@pytest.mark.usefixtures("toy_on_path")
def test_a_grandchild_holding_stdout_is_stopped_after_the_drain(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    toy = Toy([f"pidfile:{pidfile}", "out:FINAL:ok", "grandchild:60"])
    started = time.monotonic()

    ended = outside_for(toy, worktree, drain=0.3).run_session("s", None, "p", tmp_path / "l")

    assert ended.final_message == "ok"
    assert time.monotonic() - started < 10  # well under the grandchild's 60 s
    assert not [pid for pid in pids_in(pidfile) if alive(pid)]


@pytest.mark.usefixtures("toy_on_path")
def test_an_escapee_and_a_daemon_are_gone_after_the_session(worktree: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    toy = Toy([f"pidfile:{pidfile}", "escapee:60", "daemon:60", "out:x"])

    outside_for(toy, worktree, stop_grace=0.2, drain=0.2).run_session(
        "s", None, "p", tmp_path / "l"
    )

    pids = pids_in(pidfile)
    assert len(pids) == 3  # the toy itself, the escapee, the daemon
    assert not [pid for pid in pids if alive(pid)]


@pytest.mark.usefixtures("toy_on_path")
def test_stdout_closed_early_waits_for_the_cli_to_exit(worktree: Path, tmp_path: Path) -> None:
    toy = Toy(["out:before", "closeout", "sleep:0.5", "exit:4"])

    with pytest.raises(SessionFailed, match=r"^toy exited 4$"):
        outside_for(toy, worktree, drain=0.1).run_session("s", None, "p", tmp_path / "l")

    assert toy.readers[0].lines == ["before"]


@pytest.mark.usefixtures("toy_on_path")
def test_an_interrupt_from_another_thread_stops_a_hanging_session(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    toy = Toy([f"pidfile:{pidfile}", "ignore:SIGTERM", "escapee:60", "out:hanging", "hang"])
    lines: list[str] = []
    outside = outside_for(toy, worktree, lines, stop_grace=0.3)
    timer = threading.Timer(0.5, interrupts.request)
    timer.start()
    try:
        with pytest.raises(Interrupted) as raised:
            outside.run_session("s", None, "p", tmp_path / "l")
        with pytest.raises(Interrupted):  # later sessions refuse to start
            outside.run_session("later", None, "p", tmp_path / "later")
    finally:
        timer.cancel()
        interrupts.clear()

    assert str(raised.value) == "interrupted"
    assert isinstance(raised.value, KeyboardInterrupt)
    assert not [line for line in lines if "session ended" in line]
    assert not [pid for pid in pids_in(pidfile) if alive(pid)]
    assert not (tmp_path / "later").exists()


@pytest.mark.usefixtures("toy_on_path")
def test_keyboard_interrupt_in_the_main_thread_stops_the_session(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    toy = Toy([f"pidfile:{pidfile}", "hang"])
    main = threading.get_ident()
    timer = threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(Interrupted):
            outside_for(toy, worktree).run_session("s", None, "p", tmp_path / "l")
    finally:
        timer.cancel()

    assert not interrupts.requested()
    assert not [pid for pid in pids_in(pidfile) if alive(pid)]


def test_a_cli_not_on_path_is_named(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-cli-here"))  # not the user's own claude
    with pytest.raises(ThirdshiftError) as raised:
        outside_for(Toy(name="claude"), worktree).run_session("s", None, "p", tmp_path / "l")

    assert str(raised.value) == "claude is not on PATH: install it, or choose another Harness"
    assert not (tmp_path / "l").exists()


def test_a_cli_that_is_not_executable_is_named(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    install_toy(bin_dir).chmod(0o644)
    monkeypatch.setenv("PATH", str(bin_dir))

    with pytest.raises(ThirdshiftError) as raised:
        outside_for(Toy(), worktree).run_session("s", None, "p", tmp_path / "l")

    assert str(raised.value) == f"toy on PATH at {bin_dir / 'toy'} is not executable"


@pytest.mark.usefixtures("toy_on_path")
def test_a_missing_worktree_is_named(tmp_path: Path) -> None:
    with pytest.raises(ThirdshiftError) as raised:
        outside_for(Toy(), tmp_path / "gone").run_session("s", None, "p", tmp_path / "l")

    assert str(raised.value) == f"worktree {tmp_path / 'gone'} is not a folder"


@pytest.mark.usefixtures("toy_on_path")
def test_a_log_folder_that_cannot_be_made_is_named(worktree: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the folder should be")
    log = tmp_path / "taken" / "l.jsonl"

    with pytest.raises(ThirdshiftError) as raised:
        outside_for(Toy(), worktree).run_session("s", None, "p", log)

    assert str(raised.value) == f"logs folder {tmp_path / 'taken'} is not a folder"


@pytest.mark.usefixtures("toy_on_path")
def test_an_argv_too_long_to_start_fails_cleanly(worktree: Path, tmp_path: Path) -> None:
    toy = Toy(["out:" + "a" * 200_000])

    with pytest.raises(ThirdshiftError) as raised:
        outside_for(toy, worktree).run_session("s", None, "p", tmp_path / "l")

    assert re.fullmatch(r"could not start \S+/toy: Argument list too long", str(raised.value))


@pytest.mark.usefixtures("toy_on_path")
def test_a_log_that_cannot_be_written_stops_the_session_and_says_why(
    worktree: Path, tmp_path: Path
) -> None:
    # A file size limit stands in for a full disk; it is set in a child, not in this process.
    log = tmp_path / "logs" / "s.jsonl"
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from toy import Toy
        from thirdshift import Choice, ThirdshiftError
        from thirdshift._machine import MachineOutside

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
        outside = MachineOutside(
            Path({str(worktree)!r}), Choice(Toy(["bulk:5000", "hang"])), progress=print
        )
        try:
            outside.run_session("s", None, "p", Path({str(log)!r}))
        except ThirdshiftError as error:
            print("ERROR", error)
        """
    )

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.stdout.splitlines()[-1] == f"ERROR could not write {log}: File too large"
    assert log.stat().st_size <= 100_000


@pytest.mark.usefixtures("toy_on_path")
def test_a_lost_supervisor_fails_the_session_without_leaving_the_cli(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"

    def kill_the_supervisor() -> None:
        # The file exists before the toy's pid line is in it (opened, then written).
        while not (pidfile.exists() and pidfile.read_text().endswith("\n")):
            time.sleep(0.01)
        (cli,) = pids_in(pidfile)
        os.kill(psutil.Process(cli).ppid(), signal.SIGKILL)  # the CLI's parent: its supervisor

    killer = threading.Thread(target=kill_the_supervisor)
    killer.start()
    with pytest.raises(SessionFailed) as failed:
        outside_for(Toy([f"pidfile:{pidfile}", "hang"]), worktree).run_session(
            "s", None, "p", tmp_path / "l"
        )
    killer.join()

    assert str(failed.value) == "toy ended with no exit status (its supervisor was lost)"
    # SIGKILLed: its stdout closed as it began to exit, which may take a moment to finish.
    deadline = time.monotonic() + 5
    while [pid for pid in pids_in(pidfile) if alive(pid)] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [pid for pid in pids_in(pidfile) if alive(pid)]


@pytest.mark.usefixtures("toy_on_path")
def test_a_keyboard_interrupt_just_after_a_read_loses_nothing_from_the_log(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interrupt is made to arrive in the one place it could lose a chunk: os.read has
    # returned it, and the log has not had it yet.
    read = os.read
    interrupted: list[bytes] = []

    def read_then_interrupt(fd: int, size: int) -> bytes:
        data = read(fd, size)
        if b"first" in data and not interrupted:
            interrupted.append(data)
            _thread.interrupt_main()
        return data

    monkeypatch.setattr(os, "read", read_then_interrupt)
    log = tmp_path / "l.jsonl"

    with pytest.raises(Interrupted):
        # One write of "first\n" (print may write the newline apart, and be stopped between).
        toy = Toy(["raw:" + b"first\n".hex(), "hang"])
        outside_for(toy, worktree).run_session("s", None, "p", log)

    assert interrupted
    assert log.read_bytes() == b"first\n"


@pytest.mark.usefixtures("toy_on_path")
def test_the_stderr_sidecar_keeps_64_mib_and_says_how_much_more_there_was(
    worktree: Path, tmp_path: Path
) -> None:
    more = 12_345
    toy = Toy([f"errbytes:{STDERR_KEPT + more - 5}", "err:last", "exit:1"])  # "last\n": 5

    with pytest.raises(SessionFailed) as failed:
        outside_for(toy, worktree).run_session("s", None, "p", tmp_path / "l.jsonl")

    note = f"thirdshift: {more} more bytes of stderr were not kept"
    sidecar = tmp_path / "l.stderr"
    assert sidecar.stat().st_size == STDERR_KEPT + len(note) + 2
    with sidecar.open("rb") as file:
        assert file.read(16) == b"e" * 16
        file.seek(STDERR_KEPT - 16)
        assert file.read() == b"e" * 16 + f"\n{note}\n".encode()
    assert str(failed.value) == f"toy exited 1: {note}"


@pytest.mark.usefixtures("toy_on_path")
def test_a_worktree_that_cannot_be_entered_is_named_and_nothing_is_logged(
    worktree: Path, tmp_path: Path
) -> None:
    # Root enters any folder: as root, the session runs in a child without that power.
    powerless: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run this test as root"
        caps = "-dac_override,-dac_read_search"
        powerless = [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]
    logs = tmp_path / "logs"
    logs.mkdir()
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from toy import Toy
        from thirdshift import Choice, ThirdshiftError
        from thirdshift._machine import MachineOutside

        outside = MachineOutside(Path({str(worktree)!r}), Choice(Toy()), progress=print)
        try:
            outside.run_session("s", None, "p", Path({str(logs / "s.jsonl")!r}))
        except ThirdshiftError as error:
            print("ERROR", error)
        """
    )
    worktree.chmod(0o600)  # no search permission, not even for its owner
    try:
        done = subprocess.run(
            [*powerless, sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        worktree.chmod(0o700)

    assert done.stdout.splitlines() == [
        f"ERROR worktree {worktree} cannot be entered: Permission denied"
    ], done.stderr
    assert list(logs.iterdir()) == []


@pytest.mark.usefixtures("toy_on_path")
@pytest.mark.parametrize("in_the_way", ["log", "folder"])
def test_a_log_not_made_is_never_said_to_be_logged_to(
    worktree: Path, tmp_path: Path, in_the_way: str
) -> None:
    lines: list[str] = []
    log = tmp_path / "logs" / "run-session.jsonl"
    if in_the_way == "log":
        log.parent.mkdir()
        log.touch()  # the name is taken: the rules will move on to -2 and say that one
    else:
        log.parent.write_text("")  # the logs folder is a file

    with pytest.raises(ThirdshiftError):
        outside_for(Toy(["out:x"]), worktree, lines).run_session("s", None, "p", log)

    assert lines == []


@pytest.mark.usefixtures("toy_on_path")
@pytest.mark.parametrize("closed", [0, 1, 2])
def test_a_session_runs_the_same_in_a_process_whose_standard_descriptor_is_closed(
    worktree: Path, tmp_path: Path, closed: int
) -> None:
    # A daemon or a process supervisor starts programs so; before, the supervisor was handed
    # fd 0 as its own pipe, took its loss for the adapter's death and stopped the CLI.
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from toy import Toy
        from thirdshift import Choice
        from thirdshift._machine import MachineOutside

        os.close({closed})
        lines = []
        outside = MachineOutside(Path({str(worktree)!r}), Choice(Toy(["stdin", "out:FINAL:ok"])),
                                 progress=lines.append)
        ended = outside.run_session("s", None, "the prompt", Path({str(tmp_path / "l.jsonl")!r}))
        Path({str(tmp_path / "said")!r}).write_text(repr((ended.final_message, lines[1:3])))
        """
    )

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 0, done.stderr
    said = (tmp_path / "said").read_text()
    assert said == repr(("ok", ["s: line the prompt", "s: line FINAL:ok"]))


def test_the_supervisor_runs_from_its_bytecode_on_the_standard_library_alone() -> None:
    # Its start is paid once a session: compiled from source each time, or with thirdshift's
    # package (and its dependencies) imported, it would cost several milliseconds more.
    argv = launch_argv(SUPERVISOR, [PROBE])
    argv[1:1] = ["-v"]  # each module loaded, and from which file
    for _ in range(2):  # the first start may write the bytecode caches; the second finds them
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]

    loaded = re.findall(r"^# code object from '?([^'\n]+)'?$", done.stderr, flags=re.M)
    package = SUPERVISOR.parent
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    ours = [Path(path) for path in loaded if Path(path).is_relative_to(package)]
    assert loaded
    assert all(Path(path).is_relative_to(stdlib) or Path(path) in ours for path in loaded)
    assert all(path.parent.name == "__pycache__" and path.suffix == ".pyc" for path in ours)
    modules = {path.stem for path in package.glob("*.py")}
    assert {path.name.split(".")[0] for path in ours} == modules  # every one, none compiled
    assert not re.search(r"^import 'thirdshift[.']", done.stderr, flags=re.M)
