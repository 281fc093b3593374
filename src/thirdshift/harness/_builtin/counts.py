"""Token counts as the opencode, Gemini and Qwen readers take them from their streams, and the
HTTP statuses their errors carry, as failures."""

from __future__ import annotations

from datetime import datetime

from thirdshift.harness._failures import FailureInfo, by_text
from thirdshift.harness._usage import count


def count_or_zero(value: object) -> int:
    """``value`` if it is a whole count (see :func:`~thirdshift.harness._usage.count`), else 0."""
    return value if count(value) else 0


def tokens_summary(tokens_in: int, cached: int, tokens_out: int) -> str:
    """``<in> input tokens (<cached> cached), <out> output tokens``, as Codex's summary reads."""
    return f"{tokens_in} input tokens ({cached} cached), {tokens_out} output tokens"


def status_failure(status: int, now: datetime) -> FailureInfo | None:
    """The failure an HTTP status names (401/403, 429, 5xx), as the shared rules read one."""
    return by_text(f"status {status}", now)
