"""The session ids each Harness resumes: plain ones passed as they are, every other refused."""

from __future__ import annotations

import pytest
from harness_helpers import (
    OPENCODE_SESSION,
    PROMPT,
    SESSION,
    THREAD,
    AnyHarness,
    every_harness,
)

from thirdshift import Choice, ThirdshiftError
from thirdshift.harness import (
    ClaudeHarness,
    CodexHarness,
)

# Session ids


HOSTILE = [
    "--dangerously-skip-permissions",
    "--yolo",
    "-x",
    "../../x",
    "a/b",
    "",
    "a b",
    "id\n--verbose",
    "id\n-y",
    "id;rm -rf /",
    ".hidden",
    "_x",
    "\uff49\uff44",  # fullwidth "id": not [A-Za-z0-9]
]


@every_harness
@pytest.mark.parametrize("session_id", HOSTILE)
def test_a_hostile_session_id_is_refused(harness: AnyHarness, session_id: str) -> None:
    with pytest.raises(ThirdshiftError, match="refusing to resume session id"):
        harness.invocation(Choice(harness), session_id, PROMPT)


@every_harness
@pytest.mark.parametrize("session_id", [SESSION, THREAD, OPENCODE_SESSION, "a", "7", "a.b_c:d-e"])
def test_a_plain_session_id_is_passed_as_it_is(harness: AnyHarness, session_id: str) -> None:
    assert session_id in harness.invocation(Choice(harness), session_id, PROMPT).argv


def test_a_session_id_longer_than_any_real_one_is_refused_and_shown_short() -> None:
    longest = "a" * 256

    assert ClaudeHarness().invocation(Choice(ClaudeHarness()), longest, "p").argv[-1] == longest
    with pytest.raises(ThirdshiftError) as raised:
        CodexHarness().invocation(Choice(CodexHarness()), longest + "a", "p")
    assert str(raised.value) == f"refusing to resume session id '{'a' * 100}…': not a plain id"
