"""thirdshift: run headless coding-agent CLIs as unattended sessions.

Start with :meth:`Sessions.within`; see the docs (docs/running-sessions.md) for the Resume rules.
"""

# No ``from __future__ import annotations`` and only private helper names here: every public
# name of this module is API (tests/test_public_api.py holds it to ``__all__``).
import importlib as _importlib
import types as _types
import typing as _typing

# Submodules the docs reach through ``thirdshift.`` (``thirdshift.interrupts.install()``).
from thirdshift import errors, harness, interrupts
from thirdshift._budget import Budget
from thirdshift._logs import Logs
from thirdshift._outside import Ended, Outside, Usage
from thirdshift._records import SessionRecord
from thirdshift._sandbox import Sandbox
from thirdshift._sessions import Sessions
from thirdshift._version import __version__
from thirdshift._watchdogs import Watchdogs
from thirdshift.errors import (
    AuthFailed,
    BudgetExhausted,
    CLINotFound,
    Interrupted,
    LaterStepFailed,
    LogLimitReached,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFailed,
    SessionStalled,
    ThirdshiftError,
    TurnLimitReached,
    UsageLimitReached,
    WorkKilledAgain,
)
from thirdshift.harness import (
    Choice,
    claude,
    codex,
    gemini,
    harness_names,
    opencode,
    qwen,
)
from thirdshift.harness._registry import choice

if _typing.TYPE_CHECKING:
    from thirdshift import testing

# Loaded on first use rather than here: the testing toolkit is not needed to run sessions.
_LAZY_SUBMODULES = frozenset({"testing"})


def __getattr__(name: str) -> _types.ModuleType:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AuthFailed",
    "Budget",
    "BudgetExhausted",
    "CLINotFound",
    "Choice",
    "Ended",
    "Interrupted",
    "LaterStepFailed",
    "LogLimitReached",
    "Logs",
    "Outside",
    "Overloaded",
    "RateLimited",
    "ResumeTargetMissing",
    "Sandbox",
    "SessionFailed",
    "SessionRecord",
    "SessionStalled",
    "Sessions",
    "ThirdshiftError",
    "TurnLimitReached",
    "Usage",
    "UsageLimitReached",
    "Watchdogs",
    "WorkKilledAgain",
    "__version__",
    "choice",
    "claude",
    "codex",
    "errors",
    "gemini",
    "harness",
    "harness_names",
    "interrupts",
    "opencode",
    "qwen",
    "testing",
]
