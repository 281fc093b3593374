"""The ``real_cli`` marker: a test that needs real CLIs on PATH skips without them.

``@pytest.mark.real_cli("claude", "codex")`` (no names: all five) skips the test, saying which
CLI is missing and how to install the version thirdshift is checked against, unless
``THIRDSHIFT_REQUIRE_REAL_CLIS=1`` is set (as on a CI machine that installs them), where it
fails instead. thirdshift's own suite overrides the fixture below to put its pinned CLIs first
on PATH before looking.
"""

from __future__ import annotations

import os

import pytest

from thirdshift._programs import find_program
from thirdshift.errors import CLINotFound
from thirdshift.testing.fakemodel._installing import NPM_PACKAGES, install_command

MARKER = "real_cli"
REQUIRE_ENV = "THIRDSHIFT_REQUIRE_REAL_CLIS"


def register(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*clis): needs these real CLIs on PATH (none named: all of "
        f"{', '.join(NPM_PACKAGES)}); skips without them, fails under {REQUIRE_ENV}=1",
    )


def missing(clis: tuple[str, ...]) -> str | None:
    """Why one of ``clis`` cannot run (one line), or None when all are on PATH."""
    for cli in clis:
        try:
            find_program(cli)
        except CLINotFound:
            hint = f"; install the pinned version with `{install_command(cli)}`"
            return f"{cli} is not on PATH" + (hint if cli in NPM_PACKAGES else "")
    return None


@pytest.fixture(autouse=True)
def thirdshift_real_cli(request: pytest.FixtureRequest) -> None:
    """For a test marked ``real_cli(*clis)``: skip (or fail) unless those CLIs are on PATH."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return
    problem = missing(tuple(marker.args) or tuple(NPM_PACKAGES))
    if problem is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"real_cli: {problem}; {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
    pytest.skip(f"real_cli: {problem}")
