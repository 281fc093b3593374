"""The conformance suite: the real_cli plays run with the pinned CLIs first on PATH."""

from __future__ import annotations

import os

import pytest
from pinned_clis import ALL_CLIS, PINNED_BIN, missing, verdict


@pytest.fixture(autouse=True)
def thirdshift_real_cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test marked ``real_cli(*clis)``: the pinned CLIs first on PATH, or skip/fail.

    Named as the plugin's own real_cli fixture, which it overrides: the plugin only looks on
    PATH, this suite runs the versions pinned in clis/.
    """
    marker = request.node.get_closest_marker("real_cli")
    if marker is None:
        return
    problem = missing(marker.args or ALL_CLIS)
    if problem is not None:
        action, text = verdict(problem, os.environ)
        if action == "fail":
            pytest.fail(text, pytrace=False)
        pytest.skip(text)
    monkeypatch.setenv("PATH", str(PINNED_BIN), prepend=os.pathsep)
