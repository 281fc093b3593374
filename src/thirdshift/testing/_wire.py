"""What the fake model and the fake CLIs must say alike, stdlib only.

The fake CLI programs start without site-packages and import only what they use; importing
the ``fakemodel`` package (its server, every API) cost each fake Claude call ~40 ms of its
~70 (``python -S -X importtime``). So the few facts a fake CLI shares with the fake model live
here, below both.
"""

from __future__ import annotations

from typing import Any

CLAUDE_TMP_ENV = "CLAUDE_CODE_TMPDIR"
"""Where Claude keeps its per-uid temporary folder (a background task's output, say)."""
OPENCODE_API = "/opencode/v1"
"""Where under the fake model's address opencode's provider is."""

_CHAT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
    503: "service_unavailable",
}


def error_json(status: int, message: str, error_type: str = "") -> dict[str, Any]:
    """The body of a Chat Completions API error, as the fake model sends it (the fake opencode
    quotes it)."""
    error_type = error_type or _CHAT_ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": error_type, "code": error_type, "param": None}}
