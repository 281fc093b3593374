"""The ``fake_model`` fixture: the REAL CLIs of this test (all five) talk to a FakeModel.

While the fixture is active, the test's environment is :meth:`FakeModel.env`'s, with ``HOME``
and ``CODEX_HOME`` under the test's ``tmp_path``: every CLI the test starts (through
``Sessions.within``, ``thirdshift run`` or ``subprocess``) talks to the fake model on
127.0.0.1 and reads no real credentials or settings. Each test has its own server on its own
port, so it is safe under ``pytest -n auto``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from thirdshift._programs import find_program
from thirdshift.errors import CLINotFound
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.fakemodel._environment import REMOVED
from thirdshift.testing.fakemodel._installing import install_command


def require_on_path(cli: str) -> None:
    """Fail the test in one line, saying how to install ``cli``, when it is not on PATH."""
    try:
        find_program(cli)
        return
    except CLINotFound:
        pass  # failed below, outside the handler, so that the report is that one line
    pytest.fail(
        f"fake_model: {cli} is not on PATH; install the pinned version with "
        f"`{install_command(cli)}`",
        pytrace=False,
    )


@pytest.fixture
def fake_model(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeModel]:
    """A :class:`~thirdshift.testing.fakemodel.FakeModel` the test's real CLIs talk to.

    Script each session with ``fake_model.claude.script(...)`` or ``fake_model.codex.script(...)``
    (the CLI must be on PATH: if not, the test fails saying how to install it); read what the
    CLI sent in ``fake_model.claude.requests``. At teardown the test fails if a scripted-session
    request found no script, or (unless the ``thirdshift`` marker says
    ``assert_all_consumed=False``) a script was not played to its end.
    """
    from pytest_thirdshift import _fail_on_problems  # deferred: that module imports this one

    with FakeModel(on_script=require_on_path) as model:
        for name in REMOVED:
            monkeypatch.delenv(name, raising=False)
        for name, value in model.env(tmp_path / "fake-model-home").items():
            if os.environ.get(name) != value:
                monkeypatch.setenv(name, value)
        yield model
    _fail_on_problems("fake_model", request, model.problems)
