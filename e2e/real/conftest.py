"""The real_cli tests: the pinned real CLIs first on PATH, or a skip (a failure on CI)."""

from __future__ import annotations

import pytest
from pinned_clis import ALL_CLIS, pinned_first_on_path


@pytest.fixture(autouse=True)
def thirdshift_real_cli(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test marked ``real_cli(*clis)``: the pinned CLIs first on PATH, or skip/fail.

    Named as the plugin's own real_cli fixture, which it overrides: the plugin only looks on
    PATH, this suite runs the versions pinned in clis/.
    """
    marker = request.node.get_closest_marker("real_cli")
    if marker is None:
        return
    pinned_first_on_path(marker.args or ALL_CLIS, monkeypatch)
