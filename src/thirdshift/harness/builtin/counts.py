"""Token counts as the opencode, Gemini and Qwen readers take them from their streams.

A count is an ``int`` that is not a ``bool`` and not negative: stream data is hostile, and JSON's
``true`` is a Python ``int``.
"""

from __future__ import annotations

from typing import TypeGuard


def is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def count_or_zero(value: object) -> int:
    return value if is_count(value) else 0


def tokens_summary(tokens_in: int, cached: int, tokens_out: int) -> str:
    """``<in> input tokens (<cached> cached), <out> output tokens``, as Codex's summary reads."""
    return f"{tokens_in} input tokens ({cached} cached), {tokens_out} output tokens"
