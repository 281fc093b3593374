"""thirdshift: run headless coding-agent CLIs as unattended sessions.

Start with :meth:`Sessions.within`; see the README for the Resume rules.
"""

from thirdshift._version import __version__
from thirdshift.errors import Interrupted, LaterStepFailed, SessionFailed, ThirdshiftError
from thirdshift.harness import (
    Choice,
    Harness,
    Invocation,
    StreamReader,
    claude,
    codex,
    harness_named,
    harness_names,
    hookimpl,
)
from thirdshift.logs import Logs
from thirdshift.outside import Ended, Outside
from thirdshift.prompts import resume_prompt
from thirdshift.sessions import Sessions

__all__ = [
    "Choice",
    "Ended",
    "Harness",
    "Interrupted",
    "Invocation",
    "LaterStepFailed",
    "Logs",
    "Outside",
    "SessionFailed",
    "Sessions",
    "StreamReader",
    "ThirdshiftError",
    "__version__",
    "claude",
    "codex",
    "harness_named",
    "harness_names",
    "hookimpl",
    "resume_prompt",
]
