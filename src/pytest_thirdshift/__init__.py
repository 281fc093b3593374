"""pytest_thirdshift: the pytest plugin and testing toolkit for code that runs thirdshift.

Load it with ``pytest -p pytest_thirdshift`` (it also registers itself through the ``pytest11``
entry point). Fixtures:

- ``scripted_outside``: a :class:`ScriptedOutside` that ``Sessions.within`` uses while the
  fixture is active, for in-process tests of code that runs sessions.

Marker: ``@pytest.mark.thirdshift(assert_all_consumed=False)`` lets a test leave script unused.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_thirdshift.scripted import ProgressLine, ScriptedOutside, SessionCall, UnscriptedSession
from thirdshift.wiring import default_outside

__all__ = [
    "ProgressLine",
    "ScriptedOutside",
    "SessionCall",
    "UnscriptedSession",
    "scripted_outside",
]

MARKER = "thirdshift"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(assert_all_consumed=True): settings of the thirdshift fixtures; "
        "assert_all_consumed=False lets a test leave scripted sessions unused.",
    )


def _assert_all_consumed(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker(MARKER)
    return True if marker is None else bool(marker.kwargs.get("assert_all_consumed", True))


@pytest.fixture
def scripted_outside(request: pytest.FixtureRequest) -> Iterator[ScriptedOutside]:
    """A fresh ScriptedOutside, used by ``Sessions.within`` wherever no ``outside=`` is given."""
    outside = ScriptedOutside()
    with default_outside(outside):
        yield outside
    problems = outside.problems(include_unconsumed=_assert_all_consumed(request))
    if problems:
        pytest.fail("scripted_outside: " + "; ".join(problems), pytrace=False)
