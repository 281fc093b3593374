"""When a stuck session is stopped, and how long each stop signal may take: one value.

:class:`Watchdogs` is made (so checked) once, by the caller of ``Sessions.within``, by
``thirdshift run`` from its flags, or in workflow code inside a ``SessionRequest``, and then
passed unchanged down to the Watchdog that keeps it (:mod:`thirdshift._machine.watchdogs`) and
the stop that waits ``stop_grace`` (httpx's ``Timeout`` is the picture: one value per concern).
It lives on the floor, importing nothing of thirdshift (a test holds it to that), so that every
layer may take it. No ``from __future__ import annotations``: Temporal's converter reads the
fields' types from the class, in the workflow sandbox too, where a string may not resolve.
"""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Watchdogs:
    """The watchdogs of a ``within`` block's sessions, in seconds.

    Each watchdog stops a stuck session with the whole-tree stop; ``None`` turns it off:

    - ``idle``: no byte on the CLI's stdout for that long (a foreground tool can be silent for
      minutes, so the default is half an hour): :class:`~thirdshift.errors.SessionStalled`;
    - ``after_result``: the CLI still running that long after its stream said the turn was
      over (each new result restarts the count); the result stands;
    - ``wall``: one session's whole run: ``SessionStalled``.

    ``stop_grace`` is how long each of the Harness's stop signals may take to work before the
    next (then SIGKILL), however a session is stopped. A watchdog is ``None`` or a finite
    number of seconds above 0, ``stop_grace`` a finite number of seconds, 0 or more: anything
    else is a ``ValueError`` (a ``TypeError`` for what is no number), naming the field.
    """

    idle: float | None = 1800.0
    after_result: float | None = 60.0
    wall: float | None = None
    stop_grace: float = 10.0

    def __post_init__(self) -> None:
        for name in ("idle", "after_result", "wall"):
            limit = getattr(self, name)
            if limit is None:
                continue
            _check_number(name, limit, "None (off) or a number of seconds")
            if not (math.isfinite(limit) and limit > 0):
                raise ValueError(
                    f"Watchdogs {name} must be None (off) or a finite number of seconds above "
                    f"0, not {limit!r}"
                )
        grace = self.stop_grace
        _check_number("stop_grace", grace, "a number of seconds")
        if not (math.isfinite(grace) and grace >= 0):
            raise ValueError(
                f"Watchdogs stop_grace must be a finite number of seconds, 0 or more, not {grace!r}"
            )


def _check_number(name: str, value: object, wanted: str) -> None:
    """A ``TypeError`` saying what ``name`` takes, unless ``value`` is a number."""
    # bool is an int to Python but never a duration a user meant.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"Watchdogs {name} must be {wanted}, not {value!r}")
