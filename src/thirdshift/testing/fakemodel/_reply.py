"""What the fake model sends back for one request, and how both dialects pick out their parts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from thirdshift.testing.fakemodel._admission import KeyHeader
from thirdshift.testing.fakemodel._script import ModelRequest, ScriptedModel


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: a JSON body, a stream of server-sent events, or nothing at all.

    ``hold``: after what is sent (possibly nothing), keep the connection open and silent until
    the fake model closes: how :func:`hang` and :func:`stall` look to a CLI. An event with an
    empty name is sent as a bare ``data:`` line (Chat Completions, Gemini), and a string as
    its data is sent as it is (``[DONE]``).
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    json: Any = None
    events: tuple[tuple[str, Mapping[str, Any] | str], ...] | None = None
    hold: bool = False


def hold_silent() -> Reply:
    """Accept the request and answer nothing: no status line, no byte."""
    return Reply(hold=True)


def json_object(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object; anything else is an empty one (the body is hostile)."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return {}
    return body if isinstance(body, dict) else {}


def text_of(content: Any) -> str:
    """The text in a message's or a tool result's ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


class Dialect(Protocol):
    """One API: how its requests are read and answered, and how it says no. All share a server."""

    @property
    def key_headers(self) -> tuple[KeyHeader, ...]:
        """Where the API's real CLI carries its key: the only places the key is taken from."""
        ...

    def answer(
        self, path: str, headers: Mapping[str, str], body: dict[str, Any], model: ScriptedModel
    ) -> tuple[Reply, ModelRequest]:
        """The reply to one request, and the record of it (the caller records it)."""
        ...

    def error(self, status: int, message: str) -> Reply:
        """A refusal in the API's own error shape, so that its CLI reports it as what it is."""
        ...
