"""Plays a scenario through ``Sessions.within`` and reports what thirdshift made of it."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from thirdshift import interrupts
from thirdshift._containment import Containment
from thirdshift._logs import Logs
from thirdshift._machine import MachineOutside
from thirdshift._outside import Ended
from thirdshift._records import SessionRecord
from thirdshift._sandbox import Sandbox
from thirdshift._sessions import Sessions
from thirdshift.errors import Interrupted, ThirdshiftError
from thirdshift.harness import Choice, harness_named
from thirdshift.testing.conformance import _procs as procs
from thirdshift.testing.conformance._normalise import normalised, progress_line
from thirdshift.testing.conformance._players import Player
from thirdshift.testing.conformance._scenario import Observed, Scenario, SessionOutcome

SESSION_STARTS = "logging the session to "
"""How the progress line begins that the adapter says as it is about to start a session."""
INTERRUPT_WAIT = 60.0
"""Seconds a scenario waits for the program it interrupts on before it interrupts anyway."""


def choice_for(
    scenario: Scenario, containment: Containment = "auto", sandbox: Sandbox | None = None
) -> Choice:
    """The Choice a scenario runs its Harness with: default model and effort, its own extras,
    under ``containment``, in ``sandbox`` if one is given (the environment policy is then the
    sandbox's default, ``minimal``)."""
    return Choice(
        harness_named(scenario.harness),
        extra_args=scenario.extra_args,
        env=scenario.env,
        env_policy="minimal" if sandbox is not None else "inherit",
        containment=containment,
        sandbox=sandbox,
    )


@contextlib.contextmanager
def _environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    """``os.environ`` changed by ``changes`` while active, then as it was."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            _set(name, value)
        yield
    finally:
        for name, value in saved.items():
            _set(name, value)


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def play(
    scenario: Scenario,
    player: Player,
    folder: Path,
    *,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
) -> Observed:
    """Play ``scenario`` with ``player`` in ``folder`` (empty, the caller's to remove), its
    sessions held by ``containment``, each in ``sandbox`` if one is given.

    While it plays, ``os.environ`` points at the CLI played (as the ``fake_model`` and
    ``fake_cli_on_path`` fixtures do): play one scenario at a time in a process.
    """
    started = time.monotonic()
    worktree = folder / "worktree"
    worktree.mkdir(parents=True)
    skills = _skills(scenario, folder)
    lines: list[str] = []
    with player.stage(scenario, folder) as stage:
        started_sessions = 0

        def progress(line: str) -> None:
            nonlocal started_sessions
            if line.startswith(SESSION_STARTS):  # said before each CLI starts
                stage.before_session(started_sessions)
                started_sessions += 1
            lines.append(line)

        records: tuple[SessionRecord, ...] = ()
        failure: BaseException | None = None
        problems: list[str] = []
        with (
            _environment(stage.env),
            interrupts.isolated(),
            _interrupting(scenario, worktree, lines, problems) as interrupted,
        ):
            try:
                with Sessions.within(
                    Logs(folder / "logs", "conformance"),
                    worktree,
                    choice_for(scenario, containment, sandbox),
                    skills=skills,
                    outside=_resuming(
                        scenario, worktree, progress, choice_for(scenario, containment, sandbox)
                    ),
                    progress=progress,
                    watchdogs=scenario.watchdogs,
                ) as sessions:
                    try:
                        sessions.run(scenario.kind, scenario.prompt)
                    finally:
                        records = sessions.records
            except Interrupted as error:
                if not interrupted.is_set():
                    raise  # not the scenario's: the user's own Ctrl-C
                failure = error
            except ThirdshiftError as error:
                failure = error
        leftovers = procs.leftovers(folder)
        ids = [record.session_id for record in records if record.session_id]
        argvs = [tuple(normalised(arg, folder, ids) for arg in argv) for argv in stage.argvs()]
        resumes = [record for record in records if record.kind.endswith("-resume")]
        seen = stage.shown()
        return Observed(
            sessions=tuple(
                SessionOutcome(
                    kind=record.kind,
                    killed=record.killed,
                    final_message=record.final_message,
                    has_session_id=record.session_id is not None,
                )
                for record in records
            ),
            progress=tuple(progress_line(line, folder, ids) for line in lines),
            resume_argv=argvs[1] if resumes and len(argvs) > 1 else None,
            resume_same_session=(
                resumes[0].session_id == records[0].session_id if resumes else None
            ),
            failure=None if failure is None else type(failure).__name__,
            failure_message=None if failure is None else normalised(str(failure), folder, ids),
            stop_signals=stage.stop_signals(),
            files=tuple((path, _read(worktree / path)) for path, _ in scenario.expected.files),
            agent_saw=tuple(text for text in scenario.expected.agent_saw if text in seen),
            leftovers=leftovers,
            problems=tuple(problems + stage.problems(unused=scenario.interrupt_on is None)),
            seconds=time.monotonic() - started,
        )


class _ResumeFirst:
    """The real adapter, whose first session is a Resume of ``resume``: ``Sessions`` itself
    resumes only a session that ended with killed work, but a scenario needs the CLI's answer
    to a Resume of an id it never made."""

    def __init__(self, outside: MachineOutside, resume: str) -> None:
        self._outside = outside
        self._resume: str | None = resume

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        first, self._resume = self._resume, None
        return self._outside.run_session(kind, resume or first, prompt, log)

    def report(self, line: str) -> None:
        self._outside.report(line)

    def wait(self, seconds: float) -> None:
        self._outside.wait(seconds)

    def cancel(self) -> None:
        self._outside.cancel()


def _resuming(
    scenario: Scenario,
    worktree: Path,
    progress: Callable[[str], None],
    choice: Choice,
) -> _ResumeFirst | None:
    """For a scenario that starts with a Resume, the Outside that does it; else None (the
    default adapter)."""
    if scenario.resume is None:
        return None
    return _ResumeFirst(MachineOutside(worktree, choice, progress=progress), scenario.resume)


def _skills(scenario: Scenario, folder: Path) -> Path | None:
    if not scenario.skills:
        return None
    skills = folder / "skills"
    for name, text in scenario.skills:
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(text, encoding="utf-8")
    return skills


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


@contextlib.contextmanager
def _interrupting(
    scenario: Scenario, worktree: Path, lines: list[str], problems: list[str]
) -> Iterator[threading.Event]:
    """While active, interrupt (``interrupts.request()``) once the scenario's program runs in
    ``worktree`` and, if the scenario expects a progress line to show its command, that line
    has come (Codex writes its ``item.started`` a moment after the command starts;
    interrupting before that would race it; opencode shows a command only once it has
    ended). Yields the event that is set once it has interrupted."""
    program = scenario.interrupt_on
    fired = threading.Event()
    if program is None:
        yield fired
        return
    done = threading.Event()

    def showing(line: str) -> bool:
        return ": $ " in line and program in line.partition(": $ ")[2].split()

    wait_for_line = any(showing(line) for line in scenario.expected.progress)

    def shown() -> bool:
        return not wait_for_line or any(showing(line) for line in list(lines))

    def watch() -> None:
        deadline = time.monotonic() + INTERRUPT_WAIT
        while not (shown() and procs.running_program(worktree, program)):
            if done.wait(0.02):
                return
            if time.monotonic() >= deadline:
                problems.append(
                    f"{program} never ran in {INTERRUPT_WAIT:.0f} s; interrupted anyway"
                )
                break
        fired.set()
        interrupts.request()

    watcher = threading.Thread(target=watch, name="conformance-interrupt")
    watcher.start()
    try:
        yield fired
    finally:
        done.set()
        watcher.join()
