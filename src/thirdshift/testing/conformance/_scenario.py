"""A conformance scenario, the outcome it expects through thirdshift, and what was observed.

A :class:`Scenario` is written once and played by a fake CLI or by the real CLI under the fake
model; both give an :class:`Observed`, and :func:`differences` says in words where it is not
what the scenario expects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from thirdshift._watchdogs import Watchdogs
from thirdshift.testing._steps import Step


@dataclass(frozen=True)
class SessionOutcome:
    """What one session (a Resume counts as one) ended with: its ``Ended``, condensed."""

    kind: str
    killed: tuple[str, ...] = ()
    final_message: str | None = None
    has_session_id: bool = True


@dataclass(frozen=True)
class Expected:
    """The outcome a scenario expects through thirdshift, whichever way it is played.

    Progress lines, argv and messages are compared normalised (see
    :mod:`~thirdshift.testing.conformance._normalise`): ``<log>``, ``<session>``, ``<port>``.
    """

    sessions: tuple[SessionOutcome, ...]
    progress: tuple[str, ...]
    resume_argv: tuple[str, ...] | None = None
    """The argv the CLI accepted for the Resume; None: no Resume."""
    resume_same_session: bool | None = None
    """Whether the Resume continued the first session's id; None: no Resume."""
    failure: str | None = None
    """The class of the error ``Sessions`` raised (``AuthFailed``, ``Interrupted``), if any."""
    failure_message: str | None = None
    stop_signals: tuple[str, ...] | None = None
    """The signals the CLI received, where that can be observed (the fake CLI records them)."""
    files: tuple[tuple[str, str], ...] = ()
    """Files of the worktree and their expected text afterwards."""
    agent_saw: tuple[str, ...] = ()
    """Texts that must have reached the agent (a skill's body)."""


@dataclass(frozen=True)
class Scenario:
    """One behaviour of one Harness's CLI that thirdshift relies on, written once.

    ``sessions`` holds the agent's steps for each CLI process in turn (the first session, then
    its Resume). ``notified`` is what the agent says in Claude's extra ``task-notification``
    turn, when background work finished within the grace. ``interrupt_on`` names a program
    (``sleep``): the run is interrupted (``interrupts.request()``) once that program runs in
    the worktree. ``api`` is the fake model's side that speaks for the CLI (default: the
    Harness's name). ``env`` and ``extra_args`` go into the Choice (to bound a CLI's retries).
    ``watchdogs`` are ``Sessions.within``'s (:class:`~thirdshift.Watchdogs`; a scenario sets
    ``after_result``: a CLI still running so long after its result is stopped, the result
    standing).
    ``stops``: thirdshift stops a CLI mid-stream here (an interrupt, or a watchdog cutting
    Claude's grace short), so how far its stream got varies from play to play.
    ``pins`` says, in words, which real behaviour the scenario pins. ``resume`` makes the
    first session a Resume of that id (one the CLI never made; ``sessions`` is then empty).
    """

    name: str
    title: str
    harness: str
    sessions: tuple[tuple[Step, ...], ...]
    expected: Expected
    pins: str = ""
    """The real CLI's behaviour this scenario holds thirdshift (and the fake CLI) to."""
    prompt: str = "Do the task."
    kind: str = "task"
    notified: str | None = None
    skills: tuple[tuple[str, str], ...] = ()
    """Skill folders to copy in with ``within(skills=...)``: (name, text of its SKILL.md)."""
    interrupt_on: str | None = None
    resume: str | None = None
    api: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    extra_args: tuple[str, ...] = ()
    watchdogs: Watchdogs = Watchdogs()
    stops: bool = False

    @property
    def model_api(self) -> str:
        return self.api or self.harness


@dataclass(frozen=True)
class Observed:
    """What a play of a scenario showed through thirdshift (normalised)."""

    sessions: tuple[SessionOutcome, ...]
    progress: tuple[str, ...]
    resume_argv: tuple[str, ...] | None
    resume_same_session: bool | None
    failure: str | None
    failure_message: str | None
    stop_signals: tuple[str, ...] | None
    files: tuple[tuple[str, str | None], ...]
    agent_saw: tuple[str, ...]
    leftovers: tuple[str, ...]
    """Processes of the run still alive after it (each ``pid command``)."""
    problems: tuple[str, ...] = ()
    """What the fake CLI or the fake model found wrong with the play (unused script, …)."""
    seconds: float = field(default=0.0, compare=False)


def differences(expected: Expected, observed: Observed) -> list[str]:
    """Each way ``observed`` is not ``expected``, in words; empty when they agree."""
    # The outcome the Resume rules act on first, then how it was shown, then the play's own.
    found = _sessions(expected.sessions, observed.sessions)
    want_argv, got_argv = expected.resume_argv, observed.resume_argv
    if want_argv is None and got_argv is not None:
        found.append(f"a Resume was started: {_argv(got_argv)}")
    elif want_argv is not None and got_argv is None:
        found.append("the Resume was not started")
    elif want_argv is not None and got_argv is not None and want_argv != got_argv:
        found.append(f"the Resume's argv: expected {_argv(want_argv)}, got {_argv(got_argv)}")
    if expected.resume_same_session and observed.resume_same_session is False:
        found.append("the Resume did not continue the same session id")
    if expected.failure != observed.failure:
        found.append(
            f"the failure: expected {expected.failure or 'none'}, got {observed.failure or 'none'}"
            + (f" ({observed.failure_message})" if observed.failure_message else "")
        )
    elif expected.failure_message != observed.failure_message:
        found.append(
            f"the failure's message: expected {expected.failure_message!r}, "
            f"got {observed.failure_message!r}"
        )
    want_signals, got_signals = expected.stop_signals, observed.stop_signals
    if want_signals is not None and got_signals is not None and want_signals != got_signals:
        found.append(
            f"the stop signals: expected {', '.join(want_signals) or 'none'}, "
            f"got {', '.join(got_signals) or 'none'}"
        )
    got_files = dict(observed.files)
    for path, text in expected.files:
        if got_files.get(path) != text:
            found.append(f"file {path}: expected {text!r}, got {got_files.get(path)!r}")
    for text in expected.agent_saw:
        if text not in observed.agent_saw:
            found.append(f"the agent was never shown {text!r}")
    found += [f"still running after the run: {process}" for process in observed.leftovers]
    found += _progress(expected.progress, observed.progress)
    return found + list(observed.problems)


def _sessions(
    expected: tuple[SessionOutcome, ...], observed: tuple[SessionOutcome, ...]
) -> list[str]:
    found = []
    if len(expected) != len(observed):
        found.append(
            f"sessions: expected {len(expected)} ({_kinds(expected)}), "
            f"got {len(observed)} ({_kinds(observed)})"
        )
    for want, got in zip(expected, observed, strict=False):
        if want.kind != got.kind:
            found.append(f"session {want.kind}: it ran as {got.kind}")
            continue
        if want.killed != got.killed:
            found.append(
                f"session {want.kind}: killed work: expected {_listed(want.killed)}, "
                f"got {_listed(got.killed)}"
            )
        if want.final_message != got.final_message:
            found.append(
                f"session {want.kind}: final message: expected {want.final_message!r}, "
                f"got {got.final_message!r}"
            )
        if want.has_session_id != got.has_session_id:
            found.append(
                f"session {want.kind}: "
                + ("no session id was found" if want.has_session_id else "a session id was found")
            )
    return found


def _progress(expected: tuple[str, ...], observed: tuple[str, ...]) -> list[str]:
    found = []
    for number, (want, got) in enumerate(zip(expected, observed, strict=False), start=1):
        if want != got:
            found.append(f"progress line {number}: expected {want!r}, got {got!r}")
    for number in range(len(observed) + 1, len(expected) + 1):
        found.append(f"progress line {number}: expected {expected[number - 1]!r}, got none")
    for number in range(len(expected) + 1, len(observed) + 1):
        found.append(f"progress line {number}: unexpected {observed[number - 1]!r}")
    return found


def _kinds(sessions: tuple[SessionOutcome, ...]) -> str:
    return ", ".join(session.kind for session in sessions) or "none"


def _listed(items: tuple[str, ...]) -> str:
    return ", ".join(items) if items else "none"


def _argv(argv: tuple[str, ...]) -> str:
    return " ".join(argv)
