"""What :meth:`Sessions.within` sets up around the rules: the Outside, skills and progress.

Also the hook through which a testing toolkit (the ``scripted_outside`` fixture) stands in for
the real adapter without the code under test passing anything.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from thirdshift import _telemetry as telemetry
from thirdshift._accounts import Account, account_key, accounts
from thirdshift._budget import Budget, Spending
from thirdshift._environment import session_environment
from thirdshift._notices import Notify
from thirdshift._outside import Outside, StandIn, WithinContext
from thirdshift._progress import to_stderr, to_stderr_as
from thirdshift._skills import deployed_skills, skill_names
from thirdshift._values import Ended
from thirdshift._watchdogs import Watchdogs
from thirdshift.errors import ConfigurationError
from thirdshift.harness._base import Choice, Harness

_override_lock = threading.Lock()
# What a testing toolkit put in the place of the real adapter (a StandIn), or around it (an
# Around): one stack, innermost last, so that nesting and threads behave alike for both.
_overrides: list[StandIn | Around] = []


class Around(Protocol):
    """A testing toolkit's change to the real adapter: while one is on the stack, each real
    adapter that ``within`` builds is handed through :meth:`around` (``instant_waits``)."""

    def around(self, outside: Outside, context: WithinContext) -> Outside:
        """The Outside to run the sessions of ``context``'s block through instead of
        ``outside``."""
        ...


@contextlib.contextmanager
def default_outside(stand_in: StandIn) -> Iterator[StandIn]:
    """While active, ``Sessions.within`` without an explicit ``outside=`` uses ``stand_in``.

    Meant for testing toolkits; the innermost active one wins. Each ``within`` binds it to its
    own context (worktree, Choice, progress).
    """
    with _on_stack(stand_in):
        yield stand_in


@contextlib.contextmanager
def around_adapter(around: Around) -> Iterator[None]:
    """While active, each real adapter that ``within`` builds is handed through ``around``;
    a stand-in, when one is active, is used as it is."""
    with _on_stack(around):
        yield


@contextlib.contextmanager
def _on_stack(entry: StandIn | Around) -> Iterator[None]:
    with _override_lock:
        _overrides.append(entry)
    try:
        yield
    finally:
        with _override_lock:
            _overrides.remove(entry)


def _active_override() -> StandIn | None:
    with _override_lock:
        stand_ins = [entry for entry in _overrides if isinstance(entry, StandIn)]
    return stand_ins[-1] if stand_ins else None


def _around_real(outside: Outside, context: WithinContext) -> Outside:
    """``outside`` handed through every active :class:`Around`, the outermost first."""
    with _override_lock:
        arounds = [entry for entry in _overrides if not isinstance(entry, StandIn)]
    for around in arounds:
        outside = around.around(outside, context)
    return outside


_notify_lock = threading.Lock()
_process_notify: list[Notify] = []


@contextlib.contextmanager
def notifying(notify: Notify) -> Iterator[None]:
    """While active, a ``within`` given no ``notify=`` hands its events to ``notify``: how
    ``thirdshift worker --notify-command`` reaches the sessions its activities run."""
    with _notify_lock:
        _process_notify.append(notify)
    try:
        yield
    finally:
        with _notify_lock:
            _process_notify.remove(notify)


def process_notify() -> Notify | None:
    """The ``notify`` of the innermost :func:`notifying`, if one is active."""
    with _notify_lock:
        return _process_notify[-1] if _process_notify else None


def account_of(choice: Choice, worktree: Path) -> Account:
    """The account the sessions of ``choice`` bill in this process: its Harness, and what its
    CLI is given to authenticate (as the CLI's environment would be made now)."""
    harness = choice.harness
    env = session_environment(choice, os.environ, worktree)
    return accounts().of(account_key(harness.name, env, harness.env_passthrough))


def checked_choice(choice: object) -> Choice:
    """``choice`` if it is a :class:`Choice`; otherwise a ``TypeError`` saying how to make one.

    A Choice that requires a billing its Harness never says is a ``ConfigurationError``: a
    requirement nothing checks would silently require nothing.
    """
    if isinstance(choice, Choice):
        harness = choice.harness
        if choice.billing is not None and harness.billing_told is None:
            raise ConfigurationError(
                f"billing={choice.billing!r} cannot be required of {harness.name}: it never "
                "says how a session is billed"
            )
        return choice
    # The name passed (within(logs, wt, "claude")), or the Harness's own name, else an example.
    name = choice if isinstance(choice, str) else getattr(choice, "name", None)
    example = repr(name) if isinstance(name, str) and name else "'codex'"
    raise TypeError(
        f"Sessions.within needs a Choice, not {type(choice).__name__}: "
        f"pass thirdshift.choice({example}) (or thirdshift.claude() / thirdshift.codex())"
    )


def checked_watchdogs(watchdogs: object) -> Watchdogs:
    """``watchdogs`` (``None``: the defaults, ``Watchdogs()``) if it is a :class:`Watchdogs`;
    otherwise a ``TypeError`` saying what to pass. Its numbers were checked when it was made."""
    if watchdogs is None:
        return Watchdogs()
    if not isinstance(watchdogs, Watchdogs):
        raise TypeError(f"watchdogs must be a thirdshift.Watchdogs or None, not {watchdogs!r}")
    return watchdogs


def check_machine_knobs(max_log_bytes: object, still_running_every: object) -> None:
    """A ``ValueError`` unless ``max_log_bytes`` (each Session log's cap) is ``None`` or a
    whole number of bytes above 0, and ``still_running_every`` (the silence before a line says
    what still runs) ``None`` or a finite number of seconds above 0.

    Checked by ``within`` before anything is set up, whichever Outside runs the sessions: a knob
    that is no size or duration is a ``ValueError`` under a stand-in too.
    """
    every = still_running_every
    if every is not None and not (
        isinstance(every, int | float)
        and not isinstance(every, bool)
        and math.isfinite(every)
        and every > 0
    ):
        raise ValueError(
            "still_running_every must be None (no limit) or a finite number of seconds above 0, "
            f"not {every!r}"
        )
    cap = max_log_bytes
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ValueError(
            f"max_log_bytes must be None (no cap) or a whole number of bytes above 0, not {cap!r}"
        )


@contextlib.contextmanager
def prepared_outside(
    worktree: Path,
    choice: Choice,
    *,
    skills: Path | None,
    outside: Outside | None,
    progress: Callable[[str], None] | None,
    watchdogs: Watchdogs,
    max_log_bytes: int | None,
    still_running_every: float | None,
    log_name: str | None = None,
    spending: Spending | None = None,
) -> Iterator[tuple[Outside, Callable[[Path], bool]]]:
    """Yield the Outside to run sessions through, and a test for whether a log exists (see
    :func:`_prepared_outside`), inside the block's span where the application traces: each
    session's span is its child."""
    with (
        telemetry.block(log_name or worktree.name),
        _prepared_outside(
            worktree,
            choice,
            skills=skills,
            outside=outside,
            progress=progress,
            watchdogs=watchdogs,
            max_log_bytes=max_log_bytes,
            still_running_every=still_running_every,
            log_name=log_name,
            spending=spending,
        ) as prepared,
    ):
        yield prepared


@contextlib.contextmanager
def _prepared_outside(
    worktree: Path,
    choice: Choice,
    *,
    skills: Path | None,
    outside: Outside | None,
    progress: Callable[[str], None] | None,
    watchdogs: Watchdogs,
    max_log_bytes: int | None,
    still_running_every: float | None,
    log_name: str | None = None,
    spending: Spending | None = None,
) -> Iterator[tuple[Outside, Callable[[Path], bool]]]:
    """Yield the Outside to run sessions through, and a test for whether a log exists.

    A stand-in (given, or active through :func:`default_outside`) is bound to this context;
    its skills are checked but never copied, and nothing is spawned. A given plain Outside is
    used as it is. Either way whether its logs exist is its business, so every log counts as
    existing. Otherwise skills are copied in for as long as the block lasts (removed however it
    ends; what could not be removed is said through ``progress``), and the real adapter is
    built for ``choice``, with the ``watchdogs`` (and the stop's grace), the log cap and the
    still-running line's period.
    Without ``progress``, lines go to stderr, tagged with ``log_name`` (the ``Logs`` name).
    The real adapter stops a session whose stream crosses ``spending``'s Budget.
    """
    if progress is None:
        progress = to_stderr if log_name is None else to_stderr_as(log_name)
    chosen: Outside | StandIn | None = outside if outside is not None else _active_override()
    if isinstance(chosen, StandIn):
        if skills is not None:
            skill_names(skills)  # the same refusals as production, without touching the worktree
        context = WithinContext(worktree=worktree, choice=choice, progress=progress)
        yield chosen.bind(context), _every_log_exists
        return
    with contextlib.ExitStack() as stack:
        linked = (
            stack.enter_context(
                deployed_skills(skills, worktree, choice.harness.skills_dir, progress)
            )
            if skills
            else []
        )
        if chosen is not None:
            yield chosen, _every_log_exists
            return
        # Imported here so that in-process tests with a stand-in never load the process code.
        from thirdshift._machine import MachineOutside

        real = MachineOutside(
            worktree,
            choice,
            skills=linked,
            progress=progress,
            watchdogs=watchdogs,
            max_log_bytes=max_log_bytes,
            spending=spending,
            skills_source=skills,
            still_running_every=still_running_every,
        )
        context = WithinContext(worktree=worktree, choice=choice, progress=progress)
        yield _around_real(real, context), _log_exists


def checked_spending(budget: object, harness: Harness, earlier: object = ()) -> Spending:
    """What the block's sessions spend against ``budget`` (none: nothing limited), the
    ``earlier`` sessions' usage counted first; a ``TypeError`` for what is no Budget or no
    sequence of ``Ended``, a ``ConfigurationError`` for a Budget by a measure ``harness``'s
    stream never says."""
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a thirdshift.Budget or None, not {budget!r}")
    if isinstance(earlier, str | bytes) or not isinstance(earlier, Sequence):
        raise TypeError(f"earlier must be a sequence of thirdshift.Ended, not {earlier!r}")
    for ended in earlier:
        if not isinstance(ended, Ended):
            raise TypeError(f"earlier must hold only thirdshift.Ended values, not {ended!r}")
    spending = Spending(budget if budget is not None else Budget(), earlier)
    refused = harness.budget_checks.refusal(spending.budget, harness.name)
    if refused is not None:
        raise ConfigurationError(refused)
    return spending


def _every_log_exists(_log: Path) -> bool:
    return True


def _log_exists(log: Path) -> bool:
    """Whether ``log`` exists; a log that cannot even be looked at does not, for the caller.

    Asked in ``within``'s ``finally``: raising there would hide the error that ended the block
    (a logs folder that could not be created, say) behind a traceback about the check.
    """
    try:
        return log.exists()
    except OSError:
        return False
