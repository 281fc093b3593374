"""thirdshift: run headless coding-agent CLIs as unattended sessions.

Start with :meth:`Sessions.within`; see the README for the Resume rules.
"""

from thirdshift._version import __version__
from thirdshift.errors import (
    AuthFailed,
    CLINotFound,
    Interrupted,
    LaterStepFailed,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFailed,
    SessionStalled,
    ThirdshiftError,
    TurnLimitReached,
    UsageLimitReached,
)
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
from thirdshift.outside import Ended, Outside, Usage
from thirdshift.prompts import resume_prompt
from thirdshift.records import SessionRecord
from thirdshift.sessions import Sessions

__all__ = [
    "AuthFailed",
    "CLINotFound",
    "Choice",
    "Ended",
    "Harness",
    "Interrupted",
    "Invocation",
    "LaterStepFailed",
    "Logs",
    "Outside",
    "Overloaded",
    "RateLimited",
    "ResumeTargetMissing",
    "SessionFailed",
    "SessionRecord",
    "SessionStalled",
    "Sessions",
    "StreamReader",
    "ThirdshiftError",
    "TurnLimitReached",
    "Usage",
    "UsageLimitReached",
    "__version__",
    "claude",
    "codex",
    "harness_named",
    "harness_names",
    "hookimpl",
    "resume_prompt",
]
