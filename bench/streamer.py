"""A stand-in ``claude`` for the fleet benchmark: a session that streams for a set time.

``python -S streamer.py SECONDS [claude's own arguments...]`` reads its prompt from stdin to the
end (as the real CLI does), writes Claude's ``system`` line with a session id of its own, then
an assistant line (a text and a Bash tool call: one progress line) every 0.1 s until SECONDS
have passed, then a ``result``, and exits 0.
Standard library only, so that what it costs is the CLI's part, not ours.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid

INTERVAL = 0.1


def _line(event: dict[str, object]) -> None:
    os.write(1, json.dumps(event).encode() + b"\n")


def main(argv: list[str]) -> int:
    seconds = float(argv[0])
    while os.read(0, 1 << 16):
        pass
    session = str(uuid.uuid4())
    started = time.monotonic()
    _line({"type": "system", "subtype": "init", "session_id": session, "model": "bench"})
    beat = 0
    while time.monotonic() - started < seconds:
        beat += 1
        message = {
            "role": "assistant",
            "model": "bench",
            "content": [
                {"type": "text", "text": f"working, step {beat}"},
                # A tool call: each is one progress line, as an agent's session is made of them.
                {
                    "type": "tool_use",
                    "id": f"toolu_{beat}",
                    "name": "Bash",
                    "input": {"command": f"make test STEP={beat}"},
                },
            ],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        _line({"type": "assistant", "message": message, "session_id": session})
        time.sleep(INTERVAL)
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 1,
        "result": "done",
        "session_id": session,
        "total_cost_usd": 0.0001,
        "usage": {"input_tokens": 10 * beat, "output_tokens": beat},
    }
    _line(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
