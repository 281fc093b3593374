"""A pytest plugin for the benchmarks: each test's setup, call and teardown, in seconds.

``pytest -p pytest_timing`` (with ``bench/`` on PYTHONPATH) writes them as JSON to the file
that ``THIRDSHIFT_BENCH_TIMES`` names: ``{nodeid: {"setup": s, "call": s, "teardown": s}}``,
as precise as pytest's own clock (its ``--durations`` rounds them to 10 ms).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

_times: dict[str, dict[str, float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _times.setdefault(report.nodeid, {})[report.when] = report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("THIRDSHIFT_BENCH_TIMES")
    if path:
        Path(path).write_text(json.dumps(_times), encoding="utf-8")
