"""Whom the fake model answers: a request to its own address that carries its own key.

The fake model listens on 127.0.0.1, which every local user reaches, and so does a web page
whose name a rebinding DNS points there. Neither may take a test's scripted answer:

- **Host**: exactly one ``Host`` header, equal to the address ``env()`` hands the CLIs
  (``127.0.0.1:<port>``); a rebinding page sends its own name there. Refused: 421.
- **Key**: one made per :class:`FakeModel` (:func:`new_key`), carried the way the API's real CLI
  carries it (seen in the pinned CLIs' requests): Claude Code ``x-api-key`` with an API key,
  ``Authorization: Bearer`` with a login token; Codex, opencode and Qwen Code ``Authorization:
  Bearer``; Gemini CLI ``x-goog-api-key``. Nothing else: no ``?key=`` (no pinned CLI sends it,
  and a key in a URL ends up in logs), no header given twice. Refused: 401.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from email.message import Message

KEY_PREFIX = "thirdshift-fake-"


def new_key() -> str:
    """A key of its own for one fake model: 128 random bits, in hex that every CLI takes."""
    return KEY_PREFIX + secrets.token_hex(16)


@dataclass(frozen=True)
class KeyHeader:
    """A header a CLI carries its key in; ``scheme``: the word before the key, if any."""

    name: str
    scheme: str = ""

    def carries(self, headers: Message, key: str) -> bool:
        values = headers.get_all(self.name) or []
        if len(values) != 1:
            return False
        value = values[0].strip()
        if self.scheme:
            scheme, _, value = value.partition(" ")
            if scheme.lower() != self.scheme.lower():  # an auth scheme is case-insensitive
                return False
        # Compared in constant time: how long a wrong key took to refuse tells nothing.
        return hmac.compare_digest(value.encode("utf-8", "replace"), key.encode())


BEARER = KeyHeader("authorization", "Bearer")
X_API_KEY = KeyHeader("x-api-key")
GOOG_API_KEY = KeyHeader("x-goog-api-key")
EVERY_KEY_HEADER = (X_API_KEY, BEARER, GOOG_API_KEY)
"""Where a key is looked for on a path that no API owns (it is answered 404 then)."""


@dataclass(frozen=True)
class Refusal:
    """Why a request is not answered: its HTTP status and a message for the CLI to show."""

    status: int
    message: str


@dataclass(frozen=True)
class Admission:
    """What a request must show: ``address`` as its Host, ``key`` in one of its API's headers."""

    address: str
    key: str

    def refusal(self, headers: Message, key_headers: tuple[KeyHeader, ...]) -> Refusal | None:
        """None when the request may be answered; else why not (the Host is looked at first)."""
        hosts = headers.get_all("host") or []
        if len(hosts) != 1 or hosts[0].strip().lower() != self.address:
            return Refusal(
                421, f"thirdshift FakeModel: this server answers only requests to {self.address}"
            )
        if not any(header.carries(headers, self.key) for header in key_headers):
            return Refusal(
                401,
                "thirdshift FakeModel: invalid API key (the fake model takes only the key "
                "its env() hands out)",
            )
        return None
