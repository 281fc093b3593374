"""What :meth:`Sessions.within` sets up around the rules: the Outside, skills and progress.

Also the hook through which a testing toolkit (the ``scripted_outside`` fixture) stands in for
the real adapter without the code under test passing anything.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from thirdshift.harness.base import Choice
from thirdshift.machine import MachineOutside
from thirdshift.outside import Outside
from thirdshift.progress import to_stderr
from thirdshift.skills import copy_skills

_override_lock = threading.Lock()
_overrides: list[Outside] = []


@contextlib.contextmanager
def default_outside(outside: Outside) -> Iterator[Outside]:
    """While active, ``Sessions.within`` without an explicit ``outside=`` uses ``outside``.

    Meant for testing toolkits; the innermost active one wins.
    """
    with _override_lock:
        _overrides.append(outside)
    try:
        yield outside
    finally:
        with _override_lock:
            _overrides.remove(outside)


def _active_override() -> Outside | None:
    with _override_lock:
        return _overrides[-1] if _overrides else None


@contextlib.contextmanager
def prepared_outside(
    worktree: Path,
    choice: Choice,
    *,
    skills: Path | None,
    outside: Outside | None,
    progress: Callable[[str], None] | None,
    stop_grace: float,
) -> Iterator[tuple[Outside, Callable[[Path], bool]]]:
    """Yield the Outside to run sessions through, and a test for whether a log exists.

    A given or overriding Outside is used as it is: whether its logs exist is its business, so
    every log counts as existing. Otherwise the real adapter is built for ``choice``.
    """
    chosen = outside if outside is not None else _active_override()
    linked = copy_skills(skills, worktree, choice.harness.skills_dir) if skills else []
    if chosen is not None:
        yield chosen, lambda _log: True
        return
    yield (
        MachineOutside(
            worktree,
            choice,
            skills=linked,
            progress=progress or to_stderr,
            stop_grace=stop_grace,
        ),
        Path.exists,
    )
