"""Fake ``claude``, ``codex``, ``opencode``, ``gemini`` and ``qwen`` CLIs: real processes,
shaped like the real CLIs, scripted.

For end-to-end tests of code that runs agent CLIs (thirdshift's own, and downstream)::

    from thirdshift.testing.steps import background, run, say

    def test_resume(fake_cli_on_path, tmp_path):
        fake_cli_on_path.claude.script(background("pytest -x"), say("started"))
        fake_cli_on_path.claude.script(run("pytest -x"), say("all green"))
        ...  # run the code under test, which runs `claude` from PATH
        first, resume = fake_cli_on_path.claude.calls
        assert resume.argv == [*first.argv, "--resume", "fake-session-1"]

Each call of a fake takes the next script queued for it, plays its steps for real (commands
run, files are written, processes are started), emits the stream the real CLI would, and
records what it did (:class:`FakeCall`). The steps every double plays are
:mod:`thirdshift.testing.steps`; those only a fake CLI plays are here. Importing this package
needs no pytest; the ``fake_cli_on_path`` fixture of :mod:`pytest_thirdshift` wraps
:class:`FakeCLIs`.
See ``docs/fake-clis.md``.
"""

from __future__ import annotations

from thirdshift.testing.fakecli._calls import FakeCall, StartedProcess
from thirdshift.testing.fakecli._control import FakeCLI, FakeCLIs

# Its steps are their classes, imported under their verbs' names (not as _steps's
# `stderr = Stderr`) so that the API reference, which reads the source, finds them.
from thirdshift.testing.fakecli._steps import CodexError as codex_error
from thirdshift.testing.fakecli._steps import FailTurn as fail_turn
from thirdshift.testing.fakecli._steps import NoSessionId as no_session_id
from thirdshift.testing.fakecli._steps import SessionId as session_id
from thirdshift.testing.fakecli._steps import Sleep as sleep
from thirdshift.testing.fakecli._steps import Stderr as stderr

__all__ = [
    "FakeCLI",
    "FakeCLIs",
    "FakeCall",
    "StartedProcess",
    "codex_error",
    "fail_turn",
    "no_session_id",
    "session_id",
    "sleep",
    "stderr",
]
