"""The HTTP side: a threading stdlib server on 127.0.0.1 that routes each request to its dialect.

Streams go out as server-sent events in chunked transfer encoding, one chunk per event, flushed
at once: Claude Code hangs after the first event of an unframed keep-alive SSE body.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from thirdshift.testing.fakemodel._admission import (
    EVERY_KEY_HEADER,
    Admission,
    KeyHeader,
    Refusal,
)
from thirdshift.testing.fakemodel._anthropic import AnthropicDialect
from thirdshift.testing.fakemodel._chat import ChatCompletionsDialect
from thirdshift.testing.fakemodel._gemini import PREFIX as GEMINI_PREFIX
from thirdshift.testing.fakemodel._gemini import GeminiDialect
from thirdshift.testing.fakemodel._openai import MODELS, OpenAIDialect
from thirdshift.testing.fakemodel._reply import Dialect, Reply, json_object
from thirdshift.testing.fakemodel._script import ScriptedModel

LOOPBACK = "127.0.0.1"
DEFAULT_MAX_BODY = 4 * 1024 * 1024
"""The largest request body taken: the pinned CLIs' largest in the conformance runs is 116 KB
(Claude Code's), so 4 MiB leaves 35 times that. A larger one is refused (413) unread."""
DEFAULT_MAX_CONNECTIONS = 64
"""Connections served at once: in the conformance runs no fake model had more than 2 open."""
MODEL_LIST = "/v1/models"
_DRAIN_CHUNK = 64 * 1024
_LINGER_BYTES = 64 * 1024
_LINGER_SECONDS = 1.0
"""After a refusal that closes the connection, what is still read (and dropped) so that the
close does not reset the connection before the client has read the refusal."""
_BUSY_BODY = json.dumps(
    {"error": {"message": "thirdshift FakeModel: too many connections at once"}}
).encode()
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n%s"
    % (len(_BUSY_BODY), _BUSY_BODY)
)


class ModelServer(ThreadingHTTPServer):
    """The server, with what its handlers need: the scripted models, the rules of admission,
    the caps and a closing flag.

    It listens on ``port`` (``thirdshift fake-model --port``), or an ephemeral one by default.
    opencode and Qwen Code speak the same API, so each is given a base URL of its own
    (``/opencode/v1``, ``/qwen/v1``); Gemini CLI's model name is part of its paths.
    """

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hung up mid-request (Qwen resets its connections as it exits) is
        nothing to report; anything else is, as the standard library reports it."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]

    def __init__(
        self,
        models: Mapping[str, ScriptedModel],
        *,
        key: str,
        max_body: int = DEFAULT_MAX_BODY,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        port: int = 0,
    ) -> None:
        super().__init__((LOOPBACK, port), _Handler)  # port 0: an ephemeral one
        self.routes: dict[str, tuple[Dialect, ScriptedModel]] = {
            "/v1/messages": (AnthropicDialect(), models["claude"]),
            "/v1/messages/count_tokens": (AnthropicDialect(), models["claude"]),
            "/v1/responses": (OpenAIDialect(), models["codex"]),
            "/opencode/v1/chat/completions": (ChatCompletionsDialect(), models["opencode"]),
            "/qwen/v1/chat/completions": (ChatCompletionsDialect(), models["qwen"]),
        }
        self.gemini = (GeminiDialect(), models["gemini"])
        self.admission = Admission(f"{LOOPBACK}:{self.port}", key)
        self.max_body = max_body
        self._slots = threading.BoundedSemaphore(max_connections)
        self.closing = threading.Event()
        """Set when the fake model closes: held requests (hang, stall) let go then."""

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def route(self, path: str) -> tuple[Dialect, ScriptedModel] | None:
        if path.startswith(GEMINI_PREFIX):
            return self.gemini
        return self.routes.get(path)

    def dialect(self, path: str) -> Dialect | None:
        """The API ``path`` belongs to (its key headers, its error shape); None: no API's."""
        if path == MODEL_LIST:
            return self.routes["/v1/responses"][0]  # Codex asks for the list of its models
        route = self.route(path)
        return None if route is None else route[0]

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread of its own, or turn it away when all are taken."""
        if not self._slots.acquire(blocking=False):
            _turn_away(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread started: the slot was never used
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _turn_away(connection: socket.socket) -> None:
    """Say 503 to a connection over the cap, without waiting on it: it is not read at all."""
    try:
        connection.setblocking(False)  # a fresh socket's send buffer takes these few bytes
        connection.send(_BUSY)
    except OSError:
        pass  # gone already, or not taking even that: it is closed all the same


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked responses
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        length = self._admitted(path)
        if length is None:
            return
        if not self._drained(length):  # a GET's body means nothing here, but it must be read
            self.close_connection = True
            return
        if path == MODEL_LIST:
            self._send(Reply(json=MODELS))
        else:
            self._send(Reply(status=404, json={"error": {"message": "not found"}}))

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        length = self._admitted(path)
        if length is None:
            return
        raw = self.rfile.read(length) if length > 0 else b""
        route = self.server.route(path)
        if route is None:
            self._send(Reply(status=404, json={"error": {"message": "not found"}}))
            return
        dialect, model = route
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply, request = dialect.answer(path, headers, json_object(raw), model)
        model.keep(request)
        self._send(reply)

    def _admitted(self, path: str) -> int | None:
        """The length of the request's body when it may be answered; None: it was refused.

        Looked at before a byte of the body is read: the Host, then the key, then the length.
        A refused body within the cap is read and dropped, so that the connection goes on;
        any other closes the connection unread.
        """
        dialect = self.server.dialect(path)
        key_headers: tuple[KeyHeader, ...] = (
            EVERY_KEY_HEADER if dialect is None else dialect.key_headers
        )
        length = self._declared_length()
        refusal = self.server.admission.refusal(self.headers, key_headers)
        if refusal is None and length is None:
            refusal = Refusal(400, "thirdshift FakeModel: bad content-length")
        elif refusal is None and length is not None and length > self.server.max_body:
            refusal = Refusal(
                413,
                f"thirdshift FakeModel: a request body of {length} bytes is over the "
                f"{self.server.max_body} bytes it takes (FakeModel(max_body=...))",
            )
        if refusal is None:
            return length
        reply = (
            Reply(status=refusal.status, json={"error": {"message": refusal.message}})
            if dialect is None
            else dialect.error(refusal.status, refusal.message)
        )
        if length is not None and length <= self.server.max_body and self._drained(length):
            self._send(reply)
        else:
            self.close_connection = True  # the body's end is unknown, or too far: spent
            self._send(Reply(reply.status, (*reply.headers, ("connection", "close")), reply.json))
            self._linger()
        return None

    def _declared_length(self) -> int | None:
        """The body's length as the request declares it; None when that cannot be trusted."""
        values = self.headers.get_all("content-length") or ["0"]
        try:
            lengths = {int(value) for value in values}
        except ValueError:
            return None
        if len(lengths) != 1 or min(lengths) < 0:
            return None
        return lengths.pop()

    def _drained(self, length: int) -> bool:
        """Read ``length`` bytes of body and drop them; False when the client stopped first."""
        left = length
        while left > 0:
            chunk = self.rfile.read(min(left, _DRAIN_CHUNK))
            if not chunk:
                return False
            left -= len(chunk)
        return True

    def _linger(self) -> None:
        """Stop writing, and read a little more of what still comes, before the close."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            left = _LINGER_BYTES
            while left > 0:
                chunk = self.connection.recv(min(left, _DRAIN_CHUNK))
                if not chunk:
                    return
                left -= len(chunk)
        except OSError:
            pass  # timed out, or reset: either way the connection is closed next

    def _send(self, reply: Reply) -> None:
        try:
            self._write(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the CLI went away: nothing more to say to it

    def _write(self, reply: Reply) -> None:
        if reply.events is None and reply.json is None:
            self._hold()
            return
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.events is None:
            payload = json.dumps(reply.json).encode()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            return
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for name, data in reply.events:
            line = data if isinstance(data, str) else json.dumps(data)
            event = (f"event: {name}\n" if name else "").encode() + f"data: {line}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        if reply.hold:
            self._hold()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _hold(self) -> None:
        self.server.closing.wait()
        self.close_connection = True
