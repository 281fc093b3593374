"""One call of a fake CLI: take the next script, record the call, play its steps, exit.

The order of a call:

1. parse argv (an argv the real CLI would refuse is refused the same way, and consumes no
   script);
2. under the state lock: take the call's number and the next script, and its session id (a new
   ``fake-session-<n>`` / ``fake-thread-<n>``, or the one given to resume);
3. write the call's record, then read stdin to its end (the real CLIs wait for it to close);
4. play the steps; end the turn (unless a step ended it already); exit.

Signals are recorded in the call's record as they arrive. SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
and SIGUSR2 end the call with exit code 128 + signo (background work is killed first), unless a
``hang`` step listed them to be ignored.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from .dialect import Context, Dialect, Stop
from .output import Output
from .state import (
    HARNESSES,
    NO_SCRIPT_EXIT,
    SESSION_PREFIXES,
    STATE_ENV,
    Folder,
    Transaction,
    start_time,
    write_json,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, NoReturn

HANDLED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
INTERNAL_ERROR_EXIT = 70
# Steps that set how the whole call behaves, wherever they stand in the script.
CALL_OPTIONS = frozenset({"no_session_id", "session_id", "ignore_stdin", "no_events"})


def main(argv: list[str]) -> int:
    """``<claude|codex> <args…>``: play the next scripted call of that fake."""
    if not argv or argv[0] not in HARNESSES:
        sys.stderr.write("usage: python -m thirdshift.testing.fakecli claude|codex [ARGS...]\n")
        return 2
    root = os.environ.get(STATE_ENV)
    if not root or not os.path.isfile(os.path.join(root, "state.json")):
        sys.stderr.write(
            f"fake {argv[0]}: no state folder: {STATE_ENV} must name one "
            "(use the fake_cli_on_path fixture, or FakeCLIs)\n"
        )
        return 2
    Call(argv[0], argv[1:], Folder(root)).play()
    return 0  # not reached: play() ends the process


class Call:
    """One run of a fake CLI."""

    def __init__(self, harness: str, args: list[str], folder: Folder) -> None:
        self.harness = harness
        self.args = args
        self.folder = folder
        self.ignored: set[str] = set()
        self.stopping = False
        self.record: dict[str, Any] = {}
        self.out: Output | None = None
        self.dialect: Dialect | None = None

    # Recording

    def save(self) -> None:
        """Write the record atomically, with our signals held off meanwhile."""
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
        try:
            write_json(self.folder.record(self.harness, self.record["number"]), self.record)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _on_signal(self, signo: int, frame: FrameType | None) -> None:
        name = signal.Signals(signo).name
        if self.record:
            self.record["signals"].append(name)
            self.save()
        if not self.stopping and name not in self.ignored:
            raise Stop(128 + signo)

    def _started(self, pid: int, start: int | None, what: str, command: str) -> None:
        entry = {"pid": pid, "start": start, "what": what, "command": command}
        self.record["started"].append(entry)
        self.save()

    def _remember_killed(self, tasks: list[dict[str, Any]]) -> None:
        session_id = self.record["session_id"]
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
        try:
            with Transaction(self.folder) as state:
                session = state["sessions"].get(session_id)
                if session is not None:
                    session["killed"] = tasks
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    # Playing

    def play(self) -> None:
        """Play the call to its end; never returns."""
        for signo in HANDLED:
            signal.signal(signo, self._on_signal)
        try:
            self._play()
        except Stop as stop:
            self.stopping = True  # signals from now on are recorded only
            if self.dialect is not None:
                self.dialect.stop_background()
            self.finish(stop.code)
        except Exception:
            import traceback

            self.stopping = True
            message = f"fake {self.harness}: internal error\n{traceback.format_exc()}"
            if self.out is not None:
                self.out.err(message)
            else:
                sys.stderr.write(message)
            if self.record:
                self.record["error"] = message
            if self.dialect is not None:
                self.dialect.stop_background()
            self.finish(INTERNAL_ERROR_EXIT)

    def _play(self) -> None:
        if self.harness == "claude":
            from .claude import Parsed as ClaudeParsed

            parsed: Any = ClaudeParsed(self.args)
        else:
            from .codex import Parsed as CodexParsed

            parsed = CodexParsed(self.args)
        refused = parsed.error()
        cwd = os.getcwd()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
        try:
            with Transaction(self.folder) as state:
                taken = Taken(self.harness, state, parsed.resume, refused is not None, cwd)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        number, steps, options = taken.number, taken.steps, taken.options
        self.record = {
            "harness": self.harness,
            "number": number,
            "argv": [self.harness, *self.args],
            "cwd": cwd,
            "pid": os.getpid(),
            "start": start_time(os.getpid()),
            "ppid": os.getppid(),
            "pgid": os.getpgid(0),
            "sid": os.getsid(0),
            "env": {name: os.environ[name] for name in taken.record_env if name in os.environ},
            "stdin": None,
            "session_id": taken.session_id,
            "resumed": parsed.resume,
            "unscripted": steps is None and refused is None,
            "refused": None if refused is None else refused[0],
            "steps": None if steps is None else [step["step"] for step in steps],
            "signals": [],
            "started": [],
            "hanging": False,
            "died_by": None,
            "exit_code": None,
            "ended": False,
            "error": None,
            "started_at": time.time(),
        }
        self.save()
        self.out = Output(
            self.folder.output(self.harness, number, "stdout") if taken.copy_output else None,
            self.folder.output(self.harness, number, "stderr") if taken.copy_output else None,
        )
        if "no_events" in options:
            self.out.events = False
        if refused is not None:  # refused as the real CLI does: before reading stdin
            self.out.err(refused[0])
            self.finish(refused[1])
        if "ignore_stdin" not in options:
            if self.harness == "codex" and not os.isatty(0):
                from .codex import READING_STDIN

                self.out.err(READING_STDIN)
            self.record["stdin"] = _read_stdin()
            self.save()
        if steps is None:
            self.out.err(
                f"fake {self.harness}: no scripted call left for call {number} "
                f"(queue one with fake_cli_on_path.{self.harness}.script(...))"
            )
            self.finish(NO_SCRIPT_EXIT)
        context = Context(
            harness=self.harness,
            number=number,
            cwd=cwd,
            tasks_dir=self.folder.tasks,
            out=self.out,
            session_id=self.record["session_id"],
            model=parsed.model,
            started=self._started,
            remember_killed=self._remember_killed,
        )
        if self.harness == "claude":
            from .claude import ClaudeDialect

            self.dialect = ClaudeDialect(context, parsed, taken.replay)
        else:
            from .codex import CodexDialect

            self.dialect = CodexDialect(context)
        if taken.resume_refused:
            self.finish(self.dialect.refuse_resume(parsed.resume))
        self.dialect.begin()
        self._steps(self.dialect, steps)

    def _steps(self, dialect: Dialect, steps: list[dict[str, Any]]) -> NoReturn:
        exit_code = 0
        turn_over = False
        for step in steps:
            kind = step["step"]
            if kind == "fail_turn":
                if not turn_over:
                    dialect.fail_turn(step["message"], step.get("api_error_status"))
                    turn_over = True
                exit_code = step["exit_code"]
            elif kind == "exit":
                if step["abrupt"]:
                    dialect.stop_background()
                elif not turn_over:
                    dialect.end_turn()
                self.finish(step["code"])
            elif kind not in CALL_OPTIONS:
                self._step(dialect, kind, step)
        if not turn_over:
            dialect.end_turn()
        self.finish(exit_code)

    def _step(self, dialect: Dialect, kind: str, step: dict[str, Any]) -> None:
        """Play one step that neither ends the turn nor the call by itself."""
        assert self.out is not None
        if kind == "run":
            dialect.run(step["command"], step.get("description"))
        elif kind == "edit":
            dialect.edit(step["path"], step["text"])
        elif kind == "load_skill":
            dialect.load_skill(step["name"])
        elif kind == "background":
            dialect.background(step["command"], step.get("description"), step["grace"])
        elif kind == "say":
            dialect.say(step["text"])
        elif kind == "stderr":
            self.out.err(step["text"])
        elif kind == "codex_error":
            dialect.codex_error(step["message"])
        elif kind == "die":
            self._die(step["signal"], _data(step.get("partial_line")))
        elif kind == "hang":
            self._hang(step["ignore"], step.get("timeout"))
        elif kind == "sleep":
            time.sleep(step["seconds"])
        elif kind == "raw":
            self.out.write_repeated(_data(step["data"]) or b"", step["repeat"])
        elif kind == "emit":
            self.out.write(step["line"].encode("utf-8", "surrogateescape") + b"\n")
        elif kind == "close_stdout":
            self.out.close_stdout()
        elif kind in ("grandchild_holds_stdout", "escape_setsid", "daemon"):
            self._leftover(kind, step["seconds"])
        else:
            raise ValueError(f"unknown step {kind!r}")

    def _leftover(self, kind: str, seconds: float) -> None:
        from .procs import spawn_sleeper

        if kind == "grandchild_holds_stdout":
            pid, start = spawn_sleeper(seconds, keep_stdout=True)
        elif kind == "escape_setsid":
            pid, start = spawn_sleeper(
                seconds, setsid=True, ignore=(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
            )
        else:
            pid, start = spawn_sleeper(
                seconds, setsid=True, ignore=(signal.SIGHUP,), double_fork=True
            )
        self._started(pid, start, kind, f"sleep {seconds:g}")

    def _hang(self, ignore: list[str], timeout: float | None) -> None:
        """Wait for a signal that ends the call (or for ``timeout``), recording all that come.

        A signal landing just before the wait began still ends it at once: the signal module
        writes each one to a wakeup pipe, which the wait watches.
        """
        import select

        self.ignored.update(ignore)
        self.record["hanging"] = True
        self.save()
        wakeup, wake = os.pipe()
        os.set_blocking(wake, False)
        previous = signal.set_wakeup_fd(wake)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while deadline is None or time.monotonic() < deadline:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if select.select([wakeup], [], [], left)[0]:
                    os.read(wakeup, 512)  # the handler has run (and raised, unless ignored)
        finally:
            signal.set_wakeup_fd(previous)
            os.close(wakeup)
            os.close(wake)
        self.record["hanging"] = False
        self.save()

    def _die(self, name: str, partial: bytes | None) -> None:
        assert self.out is not None
        signo = signal.Signals[name]
        self.record["died_by"] = name
        self.save()
        if partial:
            self.out.write(partial)
        self.out.close()
        signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)  # nothing of ours may run now
        if signo not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled anyway
            signal.signal(signo, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signo])
        os.kill(os.getpid(), signo)
        time.sleep(1.0)  # a signal whose default is to be ignored: die anyway
        os._exit(128 + signo)

    def finish(self, code: int) -> NoReturn:
        """Record the exit code and exit at once (no interpreter shutdown: it is quick)."""
        signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)  # for good: the call is over
        if self.record:
            self.record["exit_code"] = code
            self.record["ended"] = True
            self.record["hanging"] = False
            self.save()
        if self.out is not None:
            self.out.close()
        os._exit(code)


def _data(value: dict[str, str] | None) -> bytes | None:
    """A step's bytes field (``{"b64": …}``)."""
    if value is None:
        return None
    import base64

    return base64.b64decode(value["b64"])


def _read_stdin() -> str:
    chunks = []
    try:
        while chunk := os.read(0, 1 << 16):
            chunks.append(chunk)
    except OSError:  # stdin closed or not open at all
        pass
    return b"".join(chunks).decode("utf-8", "replace")


class Taken:
    """What a call takes from the shared state, under its lock: its number, its script (None
    if none was left, or its argv was refused), and its session id."""

    def __init__(
        self, harness: str, state: dict[str, Any], resume: str | None, refused: bool, cwd: str
    ) -> None:
        mine = state[harness]
        mine["calls"] += 1
        self.number: int = mine["calls"]
        self.steps: list[dict[str, Any]] | None = None
        if not refused and mine["queue"]:
            self.steps = mine["queue"].pop(0)
        self.options = {s["step"]: s for s in self.steps or () if s["step"] in CALL_OPTIONS}
        self.record_env: list[str] = state["record_env"]
        self.copy_output: bool = state["copy_output"]
        self.session_id: str | None = None
        self.replay: list[dict[str, Any]] = []
        """Background tasks killed at the end of the session's last call (Claude replays them)."""
        self.resume_refused = False
        if self.steps is None:
            return
        sessions = state["sessions"]
        explicit = self.options.get("session_id", {}).get("value")
        if resume is not None:
            known = sessions.get(resume)
            if harness == "claude":
                # Claude ties a session to the cwd it ran in; Codex resumes from anywhere.
                if known is None or known["cwd"] != cwd:
                    self.resume_refused = True
                else:
                    self.replay = known.pop("killed", [])
            self.session_id = resume if explicit is None else explicit
        elif "no_session_id" not in self.options:
            # Numbered among the sessions that have an id: the first is fake-session-1.
            if explicit is None:
                mine["sessions"] += 1
                self.session_id = f"{SESSION_PREFIXES[harness]}{mine['sessions']}"
            else:
                self.session_id = explicit
            sessions[self.session_id] = {"harness": harness, "cwd": cwd, "killed": []}
        if "no_session_id" in self.options:
            self.session_id = None
