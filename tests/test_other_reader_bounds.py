"""What a hostile stream can make the opencode, Gemini and Qwen readers keep is bounded too.

Measured as test_reader_bounds.py measures Claude's and Codex's: by counting what the reader
keeps (characters of every string, entries of every container).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from test_reader_bounds import kept

from thirdshift.harness import GeminiReader, OpencodeReader, QwenReader
from thirdshift.harness.lines import MAX_MESSAGE
from thirdshift.harness.usage import MAX_MODELS

PIECES = 200_000
BOUND = 2 * MAX_MESSAGE + 10_000  # one message, its pieces being joined, and small change
NOTE = " more characters in the Session log)"


def line(**event: Any) -> str:
    return json.dumps(event)


def most_kept(reader: OpencodeReader | GeminiReader | QwenReader, lines: Iterator[str]) -> int:
    """The most ``reader`` kept while reading ``lines`` (looked at every 10,000 lines)."""
    most = 0
    for index, text in enumerate(lines):
        reader.feed(text)
        if index % 10_000 == 0:
            most = max(most, kept(reader))
    return max(most, kept(reader))


def gemini_deltas(count: int, size: int) -> Iterator[str]:
    yield line(type="init", session_id="s1", model="auto")
    for index in range(count):
        yield line(type="message", role="assistant", content=f"{index % 10}" * size, delta=True)


def test_200k_gemini_deltas_of_10_characters_keep_the_reader_bounded() -> None:
    reader = GeminiReader()

    assert most_kept(reader, gemini_deltas(PIECES, 10)) < BOUND  # 2 million characters sent
    message = reader.final_message
    assert message is not None
    assert message.endswith(f"… (cut: {PIECES * 10 - MAX_MESSAGE}{NOTE}")
    assert message.startswith("0" * 10 + "1" * 10)


def test_a_million_one_character_gemini_deltas_are_joined_as_they_come() -> None:
    reader = GeminiReader()

    assert most_kept(reader, gemini_deltas(MAX_MESSAGE + 7, 1)) < BOUND
    digits = "0123456789" * (MAX_MESSAGE // 10 + 1)
    assert reader.final_message == digits[:MAX_MESSAGE] + f"… (cut: 7{NOTE}"


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


def opencode_parts(count: int) -> Iterator[str]:
    for index in range(count):
        part = {"id": f"prt_{index}", "type": "text", "text": f"{index:06d}" + "t" * 5_000}
        yield line(type="text", sessionID="ses_1", part=part)
        tokens = {"input": 1, "output": 1, "cache": {"read": 1}}
        finish = {"reason": "tool-calls", "tokens": tokens, "cost": 0.001}
        yield line(type="step_finish", sessionID="ses_1", part=finish)


def test_100k_opencode_text_parts_and_steps_keep_the_reader_bounded() -> None:
    reader = OpencodeReader()

    assert most_kept(reader, opencode_parts(100_000)) < 10_000  # 500 million characters sent
    assert reader.final_message == "099999" + "t" * 5_000
    assert reader.summary == (
        "100000 steps, 200000 input tokens (100000 cached), 100000 output tokens, $100.00"
    )


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
