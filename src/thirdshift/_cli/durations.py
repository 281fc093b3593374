"""Durations on the command line: ``90s``, ``30m``, ``2h``, ``1h30m``, or plain seconds."""

from __future__ import annotations

import argparse
import math
import re

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
