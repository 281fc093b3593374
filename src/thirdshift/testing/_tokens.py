"""What one model request costs in the test doubles.

The fake model answers every request with these counts, and the fake CLIs count them as the
real CLIs count its answers, so a fake's usage is the real CLI's under the fake model.
"""

INPUT_TOKENS = 10
OUTPUT_TOKENS = 5


def usage(requests: int) -> dict[str, int]:
    """What ``requests`` model requests cost, as most CLIs name the counts."""
    return {
        "input_tokens": INPUT_TOKENS * requests,
        "output_tokens": OUTPUT_TOKENS * requests,
        "total_tokens": (INPUT_TOKENS + OUTPUT_TOKENS) * requests,
    }
