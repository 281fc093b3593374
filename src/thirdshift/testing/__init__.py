"""Test doubles for code that runs thirdshift, shipped with the library; no pytest needed.

- :mod:`thirdshift.testing.steps` is what happens in a scripted session (``run``, ``say``,
  ``background``…): one vocabulary, the one door of each step, for every double below.
- :class:`ScriptedOutside` stands where the machine adapter stands: the Resume rules run
  in-process, from a script, with every call recorded.
- :mod:`thirdshift.testing.fakecli` stands where the real CLIs stand: fake ``claude``,
  ``codex``, ``opencode``, ``gemini`` and ``qwen`` programs, real processes shaped like the real
  CLIs, scripted per call (with the steps only a fake CLI plays).
- :mod:`thirdshift.testing.fakemodel` stands where the model stands: the REAL CLIs run against
  a scripted model on 127.0.0.1.
- :mod:`thirdshift.testing.conformance` holds the fakes to the real CLIs: scenarios written
  once, played on a fake CLI and on the real CLI under the fake model.

The pytest plugin ``pytest_thirdshift`` wraps them in fixtures (``scripted_outside``,
``fake_cli_on_path`` and ``fake_model``); other test runners, demos and benchmarks use them from
here.
"""

from thirdshift._wiring import default_outside
from thirdshift.testing import conformance, fakecli, fakemodel, steps, waits
from thirdshift.testing._scripted import (
    ProgressLine,
    ScriptedOutside,
    SessionCall,
    UnscriptedSession,
)

__all__ = [
    "ProgressLine",
    "ScriptedOutside",
    "SessionCall",
    "UnscriptedSession",
    "conformance",
    "default_outside",
    "fakecli",
    "fakemodel",
    "steps",
    "waits",
]
