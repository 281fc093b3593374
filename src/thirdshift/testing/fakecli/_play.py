"""One call of a fake CLI: take the next script, record the call, play its steps, exit.

The order of a call:

1. parse argv (an argv the real CLI would refuse is refused the same way, before reading
   stdin, and consumes no script);
2. under the state lock: take the call's number, the next script, and its session id (a new
   ``fake-session-<n>`` / ``fake-thread-<n>``, or the one given to resume);
3. write the call's FakeCall, then read stdin to its end (the real CLIs wait for it to close);
4. play the steps (:data:`HANDLERS`); end the turn unless a step ended it already; exit.

Signals are recorded as they arrive. SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 end
the call (background work is killed first, by the CLIs that kill it), unless a ``hang`` step
listed them to be ignored: with exit code 128 + signo, or as the dialect says for SIGINT and
SIGTERM (opencode and Qwen die by the signal, Gemini exits 0).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, cast

from thirdshift.testing._steps import step_types
from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._calls import FakeCall, StartedProcess
from thirdshift.testing.fakecli._dialect import Dialect, Task, dialect_module
from thirdshift.testing.fakecli._output import Output
from thirdshift.testing.fakecli._procs import (
    Command,
    parent_of,
    spawn_sleeper,
    start_time,
)
from thirdshift.testing.fakecli._shared import take
from thirdshift.testing.fakecli._signals import (
    HANDLED,
    Stop,
    die_by_signal,
    signals_held,
    wait_for_signals,
)
from thirdshift.testing.fakecli._state import (
    NO_SCRIPT_EXIT,
    Folder,
    private_file,
    private_folders,
    transaction,
    write_text,
)

if TYPE_CHECKING:  # only Codex plays codex_error (check_script refuses it elsewhere)
    from thirdshift.testing.fakecli._codex import Codex

INTERNAL_ERROR_EXIT = 70


class Call:
    """One run of a fake CLI."""

    def __init__(
        self, harness: str, args: list[str], folder: Folder, entry: int | None = None
    ) -> None:
        self.harness = harness
        self.entry = entry
        """The pid of the entry process this one is the worker of (Qwen's), if any."""
        self.args = args
        self.folder = folder
        self.cwd = os.getcwd()
        self.number = 0
        self.session_id: str | None = None
        self.resumed: str | None = None
        self.sessions_here = False
        self.fake_call: FakeCall | None = None
        self.out = Output(None, None)
        self.dialect: Dialect | None = None
        self.tasks: list[Task] = []
        self.ignored: set[str] = set()
        self.stopping = False
        self.turn_over = False
        self.exit_code = 0

    # Recording

    def update(self, **changes: Any) -> None:
        """Change the FakeCall and write it (atomically, our signals held off)."""
        with signals_held():  # else a handler's own update could come between, and be lost
            if self.fake_call is not None:
                self.fake_call = dataclasses.replace(self.fake_call, **changes)
                path = self.folder.call_file(self.harness, self.number, "json")
                write_text(path, self.fake_call.to_json())

    def started(self, pid: int, start: int | None, what: str, command: str) -> None:
        assert self.fake_call is not None
        process = StartedProcess(pid, what, command, start)
        self.update(started=[*self.fake_call.started, process])

    def remember_killed(self, tasks: list[dict[str, Any]]) -> None:
        """Keep the tasks killed at the end for a later Resume of this session (Claude's)."""
        with signals_held(), transaction(self.folder) as state:
            session = state["sessions"].get(self.session_id)
            if session is not None:
                session["killed"] = tasks

    def session_requests(self, requests: int) -> int:
        """Count this call's ``requests`` to the model toward its session's; how many the
        session has made, its earlier calls' included (what Codex and Qwen report)."""
        with signals_held(), transaction(self.folder) as state:
            session = state["sessions"].get(self.session_id)
            if session is None:
                return requests
            session["requests"] = session.get("requests", 0) + requests
            return int(session["requests"])

    def _on_signal(self, signo: int, frame: FrameType | None) -> None:
        name = signal.Signals(signo).name
        if self.fake_call is not None:
            self.update(signals=[*self.fake_call.signals, name])
        if not self.stopping and name not in self.ignored:
            raise Stop(signo)

    # What steps do for real

    def path(self, path: str) -> str:
        """``path`` made absolute against the session's cwd."""
        return os.path.normpath(os.path.join(self.cwd, path))

    def write_file(self, target: str, text: str) -> bool:
        """Write ``text`` to ``target`` (parents made); whether the file is new."""
        created = not os.path.exists(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as file:
            file.write(text)
        return created

    def run_command(self, command: str) -> tuple[str, str, int]:
        """Run ``command`` to its end, recorded as it starts; its stdout, stderr, exit code."""

        def started(pid: int, start: int | None) -> None:
            self.started(pid, start, "run", command)

        return Command(command, self.cwd, started, own_session=self._own_session()).output()

    def _own_session(self) -> bool:
        return dialect_module(self.harness).PROFILE.own_session

    def start_task(self, step: steps.Background, output: str | None = None) -> Task:
        """Start ``step``'s command in the background, its output in ``output`` (made, its
        folders private), else in the tasks folder."""
        if output is None:
            name = f"{self.harness}-{self.number:04d}-{len(self.tasks)}.out"
            output = os.path.join(self.folder.tasks, name)
        else:
            private_folders(os.path.dirname(output))

        def started(pid: int, start: int | None) -> None:
            self.started(pid, start, "background", step.command)

        sink = private_file(output, os.O_WRONLY | os.O_TRUNC)
        try:
            process = Command(
                step.command,
                self.cwd,
                started,
                stdout=sink,
                stderr=subprocess.STDOUT,
                own_session=self._own_session(),
            )
        finally:
            os.close(sink)
        task = Task(step, step.described, process, output)
        self.tasks.append(task)
        return task

    def wait_out_grace(self, tasks: list[Task]) -> None:
        """Wait until ``tasks`` have all ended, for up to the longest grace among them."""
        deadline = time.monotonic() + max((task.step.grace for task in tasks), default=0.0)
        while any(task.process.running() for task in tasks) and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop_background(self) -> None:
        """Kill every background task still running, saying nothing (as on a stop), but
        those in sessions of their own, which the CLI leaves running."""
        for task in self.tasks:
            if not task.process.finished and not task.process.own_session:
                task.process.kill()

    def leftover(self, step: steps.Leftover, **how: Any) -> None:
        pid, start = spawn_sleeper(step.seconds, **how)
        self.started(pid, start, step.verb, f"sleep {step.seconds:g}")

    def hang(self, step: steps.Hang) -> None:
        """Wait for a signal that ends the call (or for the timeout), recording all that come."""
        self.ignored.update(step.ignore)
        self.update(hanging=True)
        wait_for_signals(step.timeout)
        self.update(hanging=False)

    def die(self, step: steps.Die) -> NoReturn:
        if step.partial_line:
            self.out.write(step.partial_line)
        self.die_by(signal.Signals[step.signal])

    def die_by(self, signo: signal.Signals) -> NoReturn:
        """Die by ``signo`` as a process without a handler for it dies."""
        self.update(died_by=signo.name, hanging=False)
        self.out.close()
        die_by_signal(signo)

    def api_error(self, step: steps.HttpError) -> None:
        """The model API's error, as the real CLI shows one it gives up on: a failed turn."""
        wording = dialect_module(self.harness).PROFILE.api_error_wording
        message = step.message or f"fake model error {step.status}"
        text = wording.get(step.status, wording.get(None, "{message}"))
        self.fail_turn(
            steps.FailTurn(
                text.format(status=step.status, message=message), api_error_status=step.status
            )
        )

    def fail_turn(self, step: steps.FailTurn) -> None:
        code = 1  # a second failure shows nothing more
        if not self.turn_over:
            self.turn_over = True
            assert self.dialect is not None
            code = self.dialect.fail_turn(step)
        self.exit_code = code if step.exit_code is None else step.exit_code

    def exit(self, step: steps.Exit) -> NoReturn:
        if step.abrupt:
            self.stop_background()
        elif not self.turn_over:
            assert self.dialect is not None
            self.dialect.end_turn()
        self.finish(step.code)

    # Playing

    def play(self) -> NoReturn:
        """Play the call to its end; never returns."""
        for signo in HANDLED:
            signal.signal(signo, self._on_signal)
        try:
            self._play()
        except Stop as stop:
            self.stopping = True  # signals from now on are recorded only
            signo = signal.Signals(stop.signo)
            if self.dialect is None:  # stopped before it began: no handler of the CLI's yet
                self.stop_background()
                self.finish(128 + signo)
            self.dialect.stopped(signo)
            self.stop_background()
            profile = dialect_module(self.harness).PROFILE
            if profile.dies_by_stop:
                self.die_by(signo)
            self.finish(profile.stop_exits.get(signo, 128 + signo))
        except Exception:
            self.stopping = True
            message = f"fake {self.harness}: internal error\n{traceback.format_exc()}"
            self.out.err(message)
            self.update(error=message)
            self.stop_background()
            self.finish(INTERNAL_ERROR_EXIT)

    def _play(self) -> NoReturn:
        module = dialect_module(self.harness)
        argv = module.parse(self.args)
        with signals_held(), transaction(self.folder) as state:
            taken = take(self.harness, state, argv, self.cwd, module.PROFILE.resumes)
        self.number, self.session_id, self.resumed = taken.number, taken.session_id, argv.resume
        self.sessions_here = taken.sessions_here
        self.skills_dir = taken.skills_dir
        script = taken.script
        output = self.folder.call_file(self.harness, self.number, "stdout")
        errors = self.folder.call_file(self.harness, self.number, "stderr")
        pid = os.getpid() if self.entry is None else self.entry  # the pid that was started
        self.fake_call = FakeCall(
            harness=self.harness,
            number=self.number,
            argv=[self.harness, *self.args],
            cwd=Path(self.cwd),
            stdin=None,
            env={name: os.environ[name] for name in taken.record_env if name in os.environ},
            pid=pid,
            ppid=parent_of(pid),
            pgid=os.getpgid(0),
            sid=os.getsid(0),
            session_id=taken.session_id,
            resumed=argv.resume,
            stdout_path=Path(output),
            stderr_path=Path(errors),
            unscripted=script is None and argv.refused is None,
            refused=None if argv.refused is None else argv.refused[0],
            steps=None if script is None else [step.verb for step in script],
            started_at=time.time(),
            start=start_time(pid),
        )
        # Made before the FakeCall is written: once a test sees the call, its stops are the CLI's.
        self.dialect = module.dialect(self, argv, taken.replay)
        self.update()
        if self.entry is not None:
            self.started(os.getpid(), start_time(os.getpid()), "worker", f"{self.harness} worker")
        if taken.copy_output:
            self.out = Output(output, errors)
        verbs = {step.verb for step in script or ()}
        self.out.events = "no_events" not in verbs
        if argv.refused is not None:  # refused as the real CLI does: before reading stdin
            self.out.err(argv.refused[0])
            self.finish(argv.refused[1])
        if "ignore_stdin" not in verbs:
            if module.PROFILE.stdin_notice is not None and not os.isatty(0):
                self.out.err(module.PROFILE.stdin_notice)
            self.update(stdin=_read_stdin())
        if script is None:
            waiting = f"; scripts wait for {', '.join(taken.elsewhere)}" if taken.elsewhere else ""
            self.out.err(
                f"fake {self.harness}: no scripted call left for call {self.number}{waiting} "
                f"(queue one with fake_cli_on_path.{self.harness}.script(...))"
            )
            self.finish(NO_SCRIPT_EXIT)
        if taken.resume_refused:
            self.finish(self.dialect.refuse_resume())
        self.dialect.begin()
        for step in script:
            HANDLERS[type(step)](self, step)
        if not self.turn_over:
            self.dialect.end_turn()
        self.finish(self.exit_code)

    def finish(self, code: int) -> NoReturn:
        """Record the exit code and exit at once (no interpreter shutdown: it is quick)."""
        signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)  # for good: the call is over
        self.update(exit_code=code, ended=True, hanging=False)
        self.out.close()
        os._exit(code)


def _dialect(call: Call) -> Dialect:
    assert call.dialect is not None
    return call.dialect


def _nothing(call: Call, step: steps.Step) -> None:
    """A call option: it took effect when the call began."""


IGNORES_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

HANDLERS: dict[type[steps.Step], Callable[[Call, Any], None]] = {
    steps.Run: lambda call, step: _dialect(call).run(step),
    steps.Edit: lambda call, step: _dialect(call).edit(step),
    steps.LoadSkill: lambda call, step: _dialect(call).load_skill(step),
    steps.Background: lambda call, step: _dialect(call).background(step),
    steps.Say: lambda call, step: _dialect(call).say(step),
    steps.CodexError: lambda call, step: cast("Codex", _dialect(call)).codex_error(step),
    steps.FailTurn: Call.fail_turn,
    steps.HttpError: Call.api_error,
    steps.Exit: Call.exit,
    steps.Die: Call.die,
    steps.Hang: Call.hang,
    steps.Stderr: lambda call, step: call.out.err(step.text),
    steps.Sleep: lambda call, step: time.sleep(step.seconds),
    steps.Raw: lambda call, step: call.out.write_repeated(step.data, step.repeat),
    steps.Emit: lambda call, step: call.out.write(
        step.line.encode("utf-8", "surrogateescape") + b"\n"
    ),
    steps.CloseStdout: lambda call, step: call.out.close_stdout(),
    steps.GrandchildHoldsStdout: lambda call, step: call.leftover(step, keep_stdout=True),
    steps.EscapeSetsid: lambda call, step: call.leftover(step, setsid=True, ignore=IGNORES_STOPS),
    steps.Daemon: lambda call, step: call.leftover(
        step, setsid=True, ignore=(signal.SIGHUP,), double_fork=True
    ),
}
"""What each step does; the call options do nothing as steps."""
HANDLERS.update({step_types()[verb]: _nothing for verb in steps.CALL_OPTIONS})


def _read_stdin() -> str:
    chunks = []
    try:
        while chunk := os.read(0, 1 << 16):
            chunks.append(chunk)
    except OSError:  # stdin closed or not open at all
        pass
    return b"".join(chunks).decode("utf-8", "replace")
