"""Older Outsides kept working: one written before ``wait`` and ``cancel``, or with ``step``.

:class:`~thirdshift._sessions.Sessions` takes any Outside through :func:`completed`, which fills
in only the missing part of the seam.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Protocol, cast

from thirdshift._outside import Ended, Outside


class _OlderOutside(Protocol):
    """An Outside written against an older seam: before ``wait`` and ``cancel``, perhaps with
    ``step`` where ``report`` is now."""

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended: ...


class _CompletedOutside:
    """Keeps an older Outside working: its own methods are always the ones called, and only
    the missing ones are filled in: ``step`` as ``report``, a plain sleep as ``wait``, and
    nothing to stop on ``cancel`` (the rules still refuse every later session)."""

    def __init__(self, outside: _OlderOutside) -> None:
        self._outside = outside

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        return self._outside.run_session(kind, resume, prompt, log)

    def report(self, line: str) -> None:
        report = getattr(self._outside, "report", None) or getattr(self._outside, "step", None)
        if report is not None:
            report(line)

    def wait(self, seconds: float) -> None:
        wait = getattr(self._outside, "wait", None)
        if wait is not None:
            wait(seconds)
        else:
            time.sleep(seconds)

    def cancel(self) -> None:
        cancel = getattr(self._outside, "cancel", None)
        if cancel is not None:
            cancel()


def completed(outside: Outside) -> Outside:
    """``outside`` itself, or a :class:`_CompletedOutside` if it lacks part of the seam."""
    if all(hasattr(outside, name) for name in ("report", "wait", "cancel")):
        return outside
    if not hasattr(outside, "report") and hasattr(outside, "step"):
        warnings.warn(
            f"{type(outside).__qualname__}.step is deprecated: Outside hands on progress lines "
            "through report(line) now; rename step to report",
            DeprecationWarning,
            stacklevel=3,
        )
    return _CompletedOutside(cast(_OlderOutside, outside))
