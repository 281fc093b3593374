"""Hypothesis without its per-example deadline, for the whole suite (loaded by pyproject.toml's
``-p no_deadlines``).

A deadline is a timing threshold, and timings belong in ``bench/``: on a loaded two-core
machine an example of the reader properties took over Hypothesis's default 200 ms and failed
a run that nothing in the code had broken.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("thirdshift", deadline=None)
settings.load_profile("thirdshift")
