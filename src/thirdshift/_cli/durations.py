"""Durations on the command line: ``90s``, ``30m``, ``2h``, ``1h30m``, or plain seconds; and
moments, as a date or time or a duration back from now."""

from __future__ import annotations

import argparse
import math
import re
from datetime import datetime, time, timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def seconds(text: str) -> float:
    """``text`` as seconds: finite and not negative, or ``argparse.ArgumentTypeError``."""
    spelled = text.strip()
    try:
        value = float(spelled)
    except ValueError:
        parts = _PART.findall(spelled)
        if not parts or "".join(number + unit for number, unit in parts) != spelled:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration: write e.g. 90s, 30m, 2h or 1h30m"
            ) from None
        value = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite duration, not negative")
    return value


def limit(text: str) -> float | None:
    """A duration where ``0`` turns the limit off (``None``)."""
    value = seconds(text)
    return value or None


def moment(text: str, *, now: datetime | None = None) -> datetime:
    """``text`` as a moment: an ISO 8601 date (``2026-12-01``: its midnight), date and time
    (``2026-12-01T03:00``) or time of today (``03:00``), in local time unless it names its
    zone; or a duration back from now (``2h``, ``30m``, ``1h30m``). An aware datetime, or
    ``argparse.ArgumentTypeError``."""
    spelled = text.strip()
    current = now or datetime.now().astimezone()
    try:
        return current - timedelta(seconds=seconds(spelled))
    except argparse.ArgumentTypeError:
        pass
    try:
        found = datetime.fromisoformat(spelled)
    except ValueError:
        try:
            clock = time.fromisoformat(spelled)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither a date or time (2026-12-01, 2026-12-01T03:00, 03:00) nor "
                "a duration back from now (2h, 30m)"
            ) from None
        found = datetime.combine(current.date(), clock)
    if found.tzinfo is None:
        found = found.replace(tzinfo=current.tzinfo)
    return found
