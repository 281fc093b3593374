"""What a hostile stream can make each CLI's reader keep is cut, with a note saying so (#12.7);
e2e/readers/ holds the same bounds over a hundred thousand lines and more.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from thirdshift.harness import ClaudeReader, CodexReader, GeminiReader, QwenReader
from thirdshift.harness._lines import (
    MAX_KILLED_LISTED,
    MAX_MESSAGE,
    cut,
    listed,
)
from thirdshift.harness._usage import MAX_MODELS

NOTE = " more characters in the Session log)"


def line(**event: Any) -> str:
    return json.dumps(event)


def test_a_huge_claude_final_message_is_cut_with_a_note() -> None:
    reader = ClaudeReader()
    reader.feed(
        line(type="result", subtype="success", is_error=False, result="m" * (3 * MAX_MESSAGE))
    )

    assert reader.final_message == (
        "m" * MAX_MESSAGE + f"… (cut: {2 * MAX_MESSAGE} more characters in the Session log)"
    )


def test_a_huge_codex_final_message_and_error_are_cut_with_a_note() -> None:
    reader = CodexReader()
    text = "m" * (MAX_MESSAGE + 5)
    reader.feed(
        line(type="item.completed", item={"id": "i", "type": "agent_message", "text": text})
    )
    reader.feed(line(type="turn.failed", error={"message": "e" * (MAX_MESSAGE + 7)}))

    note = " more characters in the Session log)"
    assert reader.final_message == "m" * MAX_MESSAGE + f"… (cut: 5{note}"
    assert reader.error == "e" * MAX_MESSAGE + f"… (cut: 7{note}"


def test_a_huge_claude_error_is_cut_with_a_note() -> None:
    reader = ClaudeReader()
    errors = ["e" * MAX_MESSAGE, "f" * 9]
    reader.feed(line(type="result", subtype="error_during_execution", is_error=True, errors=errors))

    assert reader.error == "e" * MAX_MESSAGE + "… (cut: 10 more characters in the Session log)"


def test_a_message_within_the_cap_is_kept_whole() -> None:
    assert cut("x" * MAX_MESSAGE) == "x" * MAX_MESSAGE


@pytest.mark.parametrize(
    ("count", "expected_last"),
    [(MAX_KILLED_LISTED, "w19"), (MAX_KILLED_LISTED + 1, "and 2 more")],
)
def test_a_list_past_the_cap_ends_with_and_n_more(count: int, expected_last: str) -> None:
    entries = [f"w{index}" for index in range(count)]
    shown = listed(entries)
    assert len(shown) == MAX_KILLED_LISTED
    assert shown[-1] == expected_last


def test_entries_not_kept_are_counted_in_and_n_more() -> None:
    assert listed(["a", "b"], more=MAX_KILLED_LISTED) == ("a", "b", f"and {MAX_KILLED_LISTED} more")


def test_huge_gemini_errors_and_model_lists_are_cut() -> None:
    reader = GeminiReader()
    models: dict[str, dict[str, int]] = {f"model-{index}": {} for index in range(10_000)}
    reader.feed(line(type="error", message="w" * (MAX_MESSAGE + 1)))
    assert reader.error == "w" * MAX_MESSAGE + f"… (cut: 1{NOTE}"
    reader.feed(
        line(
            type="result",
            status="error",
            error={"message": "e" * (MAX_MESSAGE + 2)},
            stats={"input_tokens": 1, "models": models},
        )
    )
    assert reader.error == "e" * MAX_MESSAGE + f"… (cut: 2{NOTE}"
    assert reader.usage is not None
    assert len(reader.usage.models) == MAX_MODELS


def test_a_huge_qwen_error_is_cut_with_a_note() -> None:
    reader = QwenReader()
    reader.feed(
        line(
            type="result",
            subtype="error_during_execution",
            is_error=True,
            error={"message": "q" * (MAX_MESSAGE + 3)},
        )
    )
    assert reader.error == "q" * MAX_MESSAGE + f"… (cut: 3{NOTE}"
