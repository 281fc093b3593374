"""The real :class:`~thirdshift._outside.Outside`: runs one call of a CLI on this machine."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from thirdshift import _telemetry as telemetry
from thirdshift import interrupts
from thirdshift._budget import Spending, plus
from thirdshift._containment import checked_containment
from thirdshift._environment import session_environment
from thirdshift._logs import create_log_files, last_line, sidecar_path
from thirdshift._machine.allowed import allowed, resolved
from thirdshift._machine.caps import DEFAULT_CAPS, Caps
from thirdshift._machine.follow import READ_SIZE, HeldInterrupt, StderrCopy, StdoutCopy
from thirdshift._machine.sandbox import EgressProxy, Sandboxed, checked_machine, sandboxed
from thirdshift._machine.still_running import DEFAULT_EVERY, StillRunning
from thirdshift._machine.stream_stops import billing_at_start, stream_stop
from thirdshift._machine.subagents import SubagentUsage
from thirdshift._machine.supervised import CliExit, Supervised
from thirdshift._machine.verdict import Ran, Verdict, budget_crossed, verdict
from thirdshift._machine.watch import Watch, Watched
from thirdshift._machine.watchdogs import Watchdog
from thirdshift._outside import Ended, Usage
from thirdshift._programs import find_program
from thirdshift._shown import shown
from thirdshift._watchdogs import Watchdogs
from thirdshift.errors import (
    ConfigurationError,
    Interrupted,
    SessionFailed,
    ThirdshiftError,
)
from thirdshift.harness._base import Choice, StreamReader, finish_reading
from thirdshift.harness._events import reads_objects_only


class MachineOutside:
    """Runs sessions of ``choice``'s CLI in ``worktree``, each under its own supervisor.

    Each session's CLI runs in a new session and process group with the prompt on stdin; its
    stdout is copied byte for byte into the Session log and read into progress lines; its
    stderr goes to a sidecar file. When the CLI exits, whatever it started is stopped with the
    Harness's stop signals (each followed by up to ``watchdogs.stop_grace`` seconds), then
    SIGKILL: what is still running once the ``drain`` after the CLI's exit is over counts as
    background work killed as the session ended (see :mod:`thirdshift._machine.leftovers`). An
    interrupt does the same at once, counting nothing, and raises
    :class:`~thirdshift.errors.Interrupted`. ``watchdogs`` also stop a stuck session
    (:mod:`thirdshift._machine.watchdogs`).

    With ``spending``, a session whose stream says, as it goes, that it has spent what is left
    of the Budget is stopped the same way and raises :class:`~thirdshift.errors.BudgetExhausted`
    (so does one that said so only as the CLI was exiting, too late to stop). With
    ``max_log_bytes``, one whose Session log reaches that many bytes is stopped the same way
    and raises :class:`~thirdshift.errors.LogLimitReached`. ``still_running_every`` seconds
    without a progress line, one says what still runs.
    """

    def __init__(
        self,
        worktree: Path,
        choice: Choice,
        *,
        progress: Callable[[str], None],
        skills: Sequence[str] = (),
        drain: float = 2.0,
        watchdogs: Watchdogs = Watchdogs(),
        spending: Spending | None = None,
        max_log_bytes: int | None = None,
        skills_source: Path | None = None,
        still_running_every: float | None = DEFAULT_EVERY,
    ) -> None:
        self.worktree = Path(worktree)
        self.max_log_bytes = max_log_bytes
        self.skills_source = skills_source
        self.watchdogs = watchdogs
        self.spending = spending
        self.choice = choice
        # Resolved now, so that a containment this machine does not allow (or a sandbox it
        # cannot make) is an error before anything starts; "auto" becomes the most isolated
        # one it does.
        if choice.sandbox is not None:
            checked_machine()
            self.containment = _sandbox_containment(choice.containment)
        else:
            self.containment = resolved(choice.containment)
        self.skills = tuple(skills)
        self.drain = drain
        self.still_running_every = still_running_every
        self._progress = progress
        self._cancelled = threading.Event()
        self._running_lock = threading.Lock()
        self._stop_running: Callable[[], None] | None = None
        # What each CLI session's calls used, added up (those of earlier attempts, in another
        # process, first): a Resume's reader is told it.
        self._used: dict[str, Usage] = dict(spending.earlier_calls) if spending else {}
        self._subagents = SubagentUsage()  # what the streams left out, read after each call

    def report(self, line: str) -> None:
        self._progress(shown(line))

    def wait(self, seconds: float) -> None:
        """Wait ``seconds``, ending at once with ``Interrupted`` on an interrupt or cancel."""
        with interrupts.stopping(self._cancelled.set):
            self._cancelled.wait(seconds)
        if self._cancelled.is_set() or interrupts.requested():
            raise Interrupted()

    def cancel(self) -> None:
        self._cancelled.set()
        with self._running_lock:
            stop = self._stop_running
        if stop is not None:
            stop()

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        # One span per call, where the application traces (nothing where it does not).
        with telemetry.session(self.choice, kind, resume, self.containment) as call:
            return call.ended(self._session(kind, resume, prompt, log, call))

    def _session(
        self, kind: str, resume: str | None, prompt: str, log: Path, call: telemetry.SessionCall
    ) -> Ended:
        if interrupts.requested() or self._cancelled.is_set():
            raise Interrupted()
        harness = self.choice.harness
        invocation = harness.invocation(self.choice, resume, prompt, self.skills)
        program = find_program(invocation.argv[0])
        if not self.worktree.is_dir():
            raise ConfigurationError(f"worktree {self.worktree} is not a folder")
        if not os.access(
            self.worktree, os.X_OK, effective_ids=os.access in os.supports_effective_ids
        ):
            # Else the CLI's start fails on it, and says only "could not start PROGRAM".
            denied = os.strerror(errno.EACCES)
            raise ConfigurationError(f"worktree {self.worktree} cannot be entered: {denied}")
        stdin = prompt_bytes(invocation.stdin)  # before anything is made or started
        reader = harness.reader(self.worktree)
        if resume is not None and resume in self._used:
            reader.resumed_after(self._subagents.in_stream_terms(resume, self._used[resume]))
        if call.tools is not None:
            reader.report_tool_calls(call.tools)
        # The CLI's own traces (where it makes them) nest under its session's span.
        env = call.environment(session_environment(self.choice, os.environ, self.worktree))
        billing_at_start(self.choice, env, reader)  # a billing refused: before anything starts
        log_fd, stderr_fd = create_log_files(log)
        box: Sandboxed | None = None
        try:
            if self.choice.sandbox is not None:
                box = sandboxed(
                    self.choice.sandbox,
                    harness.sandbox_needs,
                    env=env,
                    worktree=self.worktree,
                    program=program,
                    logs=log.parent,
                    hidden=(self.skills_source,) if self.skills_source else (),
                )
            # What the CLI's own state files are read from: inside a sandbox, its private home.
            state_env = box.outside_env() if box is not None else env
            # A Resume continues a session whose earlier calls left such files: only new ones count.
            killed_before = self._killed_in_state_files(state_env, resume)
            # Only once made: a refused folder or a name taken (the rules move on to -2) says no
            # file that was never written.
            self.report(f"logging the session to {log}")
            started, began = time.monotonic(), time.time()
            watched = self._run(
                kind,
                [program, *invocation.argv[1:]],
                stdin,
                reader,
                env=env,
                resume=resume,
                log_fd=log_fd,
                stderr_fd=stderr_fd,
                box=box,
            )
        finally:
            os.close(log_fd)
            os.close(stderr_fd)

        # What the CLI left (its exit code, its state files of killed work) is read only for a
        # call that ran to its end: an interrupt, a violation, a failed start or an
        # unwritten log is decided before, and reading the CLI's files must not replace it.
        killed_on_file: tuple[str, ...] = ()
        if not watched.cut_short:
            cli_exit = watched.cli_exit or CliExit(code=None, signal=None)
            finish_reading(reader, cli_exit.code)
            session_id = reader.ended().session_id
            self._subagents.read(harness, reader, state_env, session_id, began)
            killed = (
                {} if session_id is None else self._killed_in_state_files(state_env, session_id)
            )
            killed_on_file = tuple(
                work for name, work in killed.items() if name not in killed_before
            )
        noise = self.choice.harness.stderr_noise
        ran = Ran(
            kind=kind,
            harness=harness,
            program=program,
            log=log,
            seconds=time.monotonic() - started,
            stderr_line=last_line(sidecar_path(log), noise),
            spending=self.spending,
            killed_on_file=killed_on_file,
            max_log_bytes=self.max_log_bytes,
            sandbox=box is not None,
        )
        decided = verdict(watched, reader, ran)
        self._count_usage(decided)
        for line in decided.said:
            self.report(line)
        if decided.error is not None:
            raise decided.error
        assert decided.ended is not None  # one of the two, always
        return decided.ended

    def _count_usage(self, decided: Verdict) -> None:
        """Add what the session used to what its CLI session has used in this adapter."""
        result = decided.ended or decided.error
        if isinstance(result, Ended | SessionFailed | Interrupted) and result.session_id:
            used = self._used.get(result.session_id, Usage())
            self._used[result.session_id] = plus(used, result.usage)

    def _run(
        self,
        kind: str,
        argv: list[str],
        prompt: bytes,
        reader: StreamReader,
        *,
        env: Mapping[str, str],
        resume: str | None,
        log_fd: int,
        stderr_fd: int,
        box: Sandboxed | None,
    ) -> Watched:
        still = StillRunning(
            self.still_running_every,
            lambda body: self.report(f"{kind}: {body}"),
            self.choice.harness.name,
        )

        def on_line(line: str) -> None:
            for body in reader.feed(line):
                self.report(f"{kind}: {body}")
                still.said(body)

        proxy = EgressProxy(box.egress, self.report) if box is not None else None
        try:
            supervised = Supervised(
                argv,
                cwd=self.worktree,
                env=env,
                stop_signals=self.choice.harness.stop_signals,
                grace=self.watchdogs.stop_grace,
                containment=checked_containment(self.containment),
                sandbox=box,
                on_listening=proxy.serve if proxy is not None else None,
                caps=self._caps(),
            )
        except OSError as error:  # e.g. an argv too long (a session id from the stream)
            if proxy is not None:
                proxy.close()
            raise ThirdshiftError(
                f"could not start {argv[0]}: {error.strerror or error}"
            ) from error
        interrupted = False
        try:
            writer = threading.Thread(
                target=_write_prompt, args=(supervised.stdin, prompt), daemon=True
            )
            writer.start()
            with HeldInterrupt() as interrupt:
                copy = StdoutCopy(
                    supervised.stdout_fd,
                    log_fd,
                    on_line,
                    # Never more than the pipe holds: a read allocates all it asks for first.
                    read_size=min(READ_SIZE, supervised.pipe_size),
                    interrupt=interrupt,
                    max_log_bytes=self.max_log_bytes,
                    objects_only=reads_objects_only(reader),
                )
                stderr = StderrCopy(
                    supervised.stderr_fd, stderr_fd, read_size=READ_SIZE, interrupt=interrupt
                )
                watchdog = Watchdog(
                    self.watchdogs,
                    last_output=lambda: copy.last_read_at,
                    turns_ended=lambda: reader.turns_ended,
                    session_id=lambda: reader.session_id,
                    resume=resume,
                    # Checked after every read only where there is a limit to cross.
                    budget=(
                        (lambda: budget_crossed(self.spending, reader))
                        if self.spending is not None and self.spending.budget.limits_anything
                        else lambda: None
                    ),
                    stops=stream_stop(self.choice, reader),
                    still_running=still,
                )
                watch = Watch(
                    supervised,
                    copy,
                    stderr,
                    drain_seconds=self.drain,
                    interrupt=interrupt,
                    watchdog=watchdog,
                )
                try:
                    with (
                        interrupts.stopping(watch.stop, kill=watch.kill),
                        self._stopped_by_cancel(watch.stop),
                    ):
                        while True:
                            try:
                                watch.run()
                                break
                            except KeyboardInterrupt:
                                if interrupted:
                                    watch.kill()  # a second interrupt: no more grace
                                interrupted = True
                                watch.stop()
                finally:
                    watch.close()
        finally:
            supervised.close()
            if proxy is not None:
                proxy.close()
            if supervised.cgroup_left is not None:
                self.report(f"{kind}: {supervised.cgroup_left}")
        return watch.watched(
            interrupted=interrupted or interrupts.requested() or self._cancelled.is_set()
        )

    def _caps(self) -> Caps:
        """The session's caps: its Sandbox's (required where it asked for other than the
        defaults), else the default cap on processes, where the machine has one."""
        sandbox = self.choice.sandbox
        if sandbox is None:
            return DEFAULT_CAPS
        asked = {"memory"} if sandbox.memory is not None else set()
        if sandbox.pids not in (None, DEFAULT_CAPS.pids):
            asked.add("pids")
        return Caps(pids=sandbox.pids, memory=sandbox.memory, required=frozenset(asked))

    def _killed_in_state_files(
        self, env: Mapping[str, str], session_id: str | None
    ) -> Mapping[str, str]:
        """The work the CLI's own state files say it killed, for ``session_id``, if its Harness
        reads them (``work_killed_at_exit``); none without an id."""
        if session_id is None:
            return {}
        return self.choice.harness.work_killed_at_exit(self.worktree, env, session_id)

    @contextlib.contextmanager
    def _stopped_by_cancel(self, stop: Callable[[], None]) -> Iterator[None]:
        """While active, :meth:`cancel` calls ``stop`` (at once, if it was called already)."""
        with self._running_lock:
            self._stop_running = stop
        try:
            if self._cancelled.is_set():
                stop()
            yield
        finally:
            with self._running_lock:
                self._stop_running = None


def _sandbox_containment(requested: str) -> str:
    """What holds a sandboxed session's processes: its cgroup where one is asked for or
    ``auto`` finds one allowed; otherwise the sandbox's own PID namespace, whose pid 1's end
    ends everything in it (``namespace``), which ``scan`` becomes too."""
    if requested == "cgroup":
        return resolved("cgroup")
    if requested == "auto" and "cgroup" in allowed():
        return "cgroup"
    return "namespace"


def prompt_bytes(prompt: str) -> bytes:
    """``prompt`` as the CLI reads it, UTF-8: a byte an argument or stdin held that was not
    UTF-8 (which Python keeps as a surrogate escape) reaches the CLI as it was; a ``ValueError``
    for a lone surrogate that stands for no byte, which no CLI could be given."""
    try:
        return prompt.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as error:
        unwritable = prompt[error.start : error.end]
        raise ValueError(f"the prompt holds {unwritable!r}, which is no text") from None


def _write_prompt(stdin: IO[bytes], prompt: bytes) -> None:
    """Write the prompt and close stdin, however the write ends: every CLI waits for stdin to
    close before it starts."""
    try:
        with stdin:
            stdin.write(prompt)
    except OSError:
        pass  # the CLI exited without reading it; its exit status tells the story
