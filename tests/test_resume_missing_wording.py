"""Each CLI's wording for a Resume of a session it cannot find lives in its own Harness module:
its Harness tells its own stderr apart, and no other CLI's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from harness_helpers import TRANSCRIPTS

from thirdshift.errors import ResumeTargetMissing
from thirdshift.harness import FailureInfo, harness_named
from thirdshift.harness._builtin.codex import RESUME_MISSING
from thirdshift.harness._failures import by_text

CAPTURES = {
    "claude": "claude-resume-missing",
    "codex": "codex-resume-missing",
    "opencode": "opencode-resume-unknown",
    "gemini": "gemini-resume-unknown",
    "qwen": "qwen-resume-unknown",
}


_NOW = datetime(2026, 12, 1, 5, 0, tzinfo=UTC)


def stderr_lines(cli: str) -> list[str]:
    return (TRANSCRIPTS / CAPTURES[cli] / "stderr.txt").read_text().splitlines()


@pytest.mark.parametrize("harness_name", sorted(CAPTURES))
@pytest.mark.parametrize("capture_of", sorted(CAPTURES))
def test_a_harness_tells_its_own_clis_wording_only(harness_name: str, capture_of: str) -> None:
    harness = harness_named(harness_name)
    told = {harness.stderr_failure(line) for line in stderr_lines(capture_of)} - {None}
    expected = {FailureInfo(ResumeTargetMissing)} if harness_name == capture_of else set()
    assert told == expected


def test_the_generic_text_rules_know_no_clis_resume_wording() -> None:
    now_text = "Error: thread/resume failed: no rollout found for thread id 0199"
    assert by_text(now_text, _NOW) is None
    assert by_text(now_text, _NOW, RESUME_MISSING) == FailureInfo(ResumeTargetMissing)


def test_failures_py_holds_no_clis_wording() -> None:
    source = (TRANSCRIPTS.parent.parent / "src/thirdshift/harness/_failures.py").read_text()
    for words in (
        "No conversation found",
        "no rollout found",
        "Session not found",
        "Error resuming session",
        "No saved session found",
        "ClaudeSigns",
    ):
        assert words not in source
