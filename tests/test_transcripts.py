"""Every real transcript in tests/transcripts, read end to end by its Harness's reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harness_helpers import EXPECTED, WORKTREE, read_all, transcript_lines

from thirdshift import Ended
from thirdshift.harness import ClaudeReader, CodexReader

READERS: dict[str, Callable[[Path], ClaudeReader | CodexReader]] = {
    "claude": ClaudeReader,
    "codex": CodexReader,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_transcript_read_end_to_end(name: str) -> None:
    expected = EXPECTED[name]
    reader = READERS[expected.harness](WORKTREE)

    progress = read_all(reader, transcript_lines(name))

    assert tuple(progress) == expected.progress
    assert reader.session_id == expected.session_id
    assert reader.final_message == expected.final_message
    assert reader.killed == expected.killed
    assert reader.failed is expected.failed
    assert reader.summary == expected.summary
    assert reader.error == expected.error
    assert reader.ended() == Ended(
        session_id=expected.session_id,
        killed=expected.killed,
        final_message=expected.final_message,
        usage=expected.usage,
    )
