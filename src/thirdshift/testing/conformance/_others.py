"""The conformance scenarios of opencode, Gemini CLI and Qwen Code (issue 11).

Each pins a behaviour of the real CLI that thirdshift's reader, stop and Resume rules rely on;
the expected outcomes are what the pinned CLIs (opencode 1.18.33, Gemini CLI 0.61.0, Qwen Code
0.24.4) show under the fake model, and what the fake CLIs must show too.

None of the three reports killed background work in its stream, so the background scenario,
:func:`~.common.background_killed`, rests on the supervisor seeing the work left running (and, for
Qwen, which kills its own, on its status files).
"""

from __future__ import annotations

from thirdshift.testing.conformance._common import (
    KIND,
    auth_failed,
    background_killed,
    foreground,
    hello,
    interrupt,
)
from thirdshift.testing.conformance._normalise import SESSION
from thirdshift.testing.conformance._scenario import Expected, Scenario, SessionOutcome

HARNESSES = ("opencode", "gemini", "qwen")
BUILT_IN = ("claude", "codex", *HARNESSES)
"""The Harnesses thirdshift has scenarios of."""

# Qwen refuses a foreground command that is, or starts with, `sleep N` ("Blocked: standalone
# sleep"), so the long command starts with something else, for all three alike.
LONG_COMMAND = "echo started; sleep 300"

_UNKNOWN_ID = {
    # Well-formed ids of sessions that no CLI ever made.
    "opencode": "ses_0000000000000000000000none",
    "gemini": "ffffffff-ffff-4fff-bfff-ffffffffffff",
    "qwen": "ffffffff-ffff-4fff-bfff-ffffffffffff",
}
_RESUME_ARGV = {
    "opencode": ("opencode", "run", "--format", "json", "--auto", "-s", SESSION),
    "gemini": ("gemini", "-o", "stream-json", "-y", "-r", SESSION),
    "qwen": ("qwen", "-o", "stream-json", "-y", "-r", SESSION),
}
_MISSING_MESSAGE = {
    "opencode": "opencode exited 1: Error: Session not found",
    # In a worktree where it made no session yet; with sessions there it says "Invalid session
    # identifier" (the capture gemini-resume-unknown).
    "gemini": (
        "gemini exited 42: Error resuming session: No previous sessions found for this project."
    ),
    # A UUID is looked up as an id (an id that is not one, as a title: qwen-resume-unknown).
    "qwen": (
        "qwen exited 1: No saved session found with ID {id}. Run `qwen --resume` without an ID "
        "to choose from existing sessions."
    ),
}
_AUTH_MESSAGE = {
    # Each CLI's own words for it: opencode's error event, Gemini's `result` (the API's error
    # body), Qwen's assistant text.
    "opencode": "opencode exited 1: APIError 401: the key is not valid",
    "gemini": (
        'gemini exited 145: [API Error: {"error":{"code":401,"message":"the key is not valid",'
        '"status":"UNAUTHENTICATED"}}]'
    ),
    "qwen": "qwen exited 1: [API Error: 401 the key is not valid]",
}


def opencode_job(command: str) -> str:
    """How the fake model has opencode start background work: it has no background flag, so a
    shell job, its output elsewhere (one that kept the tool's stdout would hold the tool)."""
    return f"({command}) </dev/null >/dev/null 2>&1 &"


def scenarios_of(harness: str) -> tuple[Scenario, ...]:
    """The registered scenarios of ``opencode``, ``gemini`` or ``qwen``, in the order
    ``thirdshift check`` runs them."""
    ended = f"{KIND}: session ended"
    unknown = _UNKNOWN_ID[harness]
    return (
        hello(harness),
        foreground(harness),
        Scenario(
            "resume-missing",
            "unknown resume id → ResumeTargetMissing",
            harness,
            ((),),
            Expected(
                sessions=(SessionOutcome(KIND, has_session_id=False),),
                progress=("logging the session to <log>", ended),
                failure="ResumeTargetMissing",
                failure_message=_MISSING_MESSAGE[harness].format(id=unknown),
            ),
            resume=unknown,
            pins=(
                "a Resume of an id the CLI never made fails at once, and the CLI's own words "
                "for it are told apart from other failures"
            ),
        ),
        auth_failed(harness, _AUTH_MESSAGE[harness]),  # one request: no retries
        interrupt(harness, LONG_COMMAND, shown=harness != "opencode"),
        background_killed(
            harness,
            _RESUME_ARGV[harness],
            opencode_job("sleep 300") if harness == "opencode" else "sleep 300",
        ),
    )
