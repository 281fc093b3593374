"""Fake ``claude``, ``codex``, ``opencode``, ``gemini`` and ``qwen`` CLIs: real processes,
shaped like the real CLIs, scripted.

For end-to-end tests of code that runs agent CLIs (thirdshift's own, and downstream)::

    from pytest_thirdshift import fakecli as fake

    def test_resume(fake_cli_on_path, tmp_path):
        fake_cli_on_path.claude.script(fake.background("pytest -x"), fake.say("started"))
        fake_cli_on_path.claude.script(fake.run("pytest -x"), fake.say("all green"))
        ...  # run the code under test, which runs `claude` from PATH
        first, resume = fake_cli_on_path.claude.calls
        assert resume.argv == [*first.argv, "--resume", "fake-session-1"]

Each call of a fake takes the next script queued for it, plays its steps for real (commands
run, files are written, processes are started), emits the stream the real CLI would, and
records what it did (:class:`FakeCall`). Importing this package needs no pytest; the
``fake_cli_on_path`` fixture of :mod:`pytest_thirdshift` wraps :class:`FakeCLIs`.
See ``docs/fake-clis.md``.
"""

from __future__ import annotations

from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._calls import FakeCall, StartedProcess
from thirdshift.testing.fakecli._control import FakeCLI, FakeCLIs
from thirdshift.testing.fakecli._state import NO_SCRIPT_EXIT, STATE_ENV
from thirdshift.testing.fakecli._steps import *  # noqa: F403  the steps, as steps.__all__ names them

__all__ = [
    "NO_SCRIPT_EXIT",
    "STATE_ENV",
    "FakeCLI",
    "FakeCLIs",
    "FakeCall",
    "StartedProcess",
]
__all__ += steps.__all__
