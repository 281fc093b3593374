"""The HTTP side: a threading stdlib server on 127.0.0.1 that routes each request to its dialect.

Streams go out as server-sent events in chunked transfer encoding, one chunk per event, flushed
at once: Claude Code hangs after the first event of an unframed keep-alive SSE body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from thirdshift.testing.fakemodel.anthropic import AnthropicDialect
from thirdshift.testing.fakemodel.chat import ChatCompletionsDialect
from thirdshift.testing.fakemodel.gemini import PREFIX as GEMINI_PREFIX
from thirdshift.testing.fakemodel.gemini import GeminiDialect
from thirdshift.testing.fakemodel.openai import MODELS, OpenAIDialect
from thirdshift.testing.fakemodel.reply import Dialect, Reply, json_object
from thirdshift.testing.fakemodel.script import ScriptedModel

LOOPBACK = "127.0.0.1"
MAX_BODY = 64 * 1024 * 1024  # a request body above this is refused, not read into memory


class ModelServer(ThreadingHTTPServer):
    """The server, with what its handlers need: the scripted models and a closing flag.

    opencode and Qwen Code speak the same API, so each is given a base URL of its own
    (``/opencode/v1``, ``/qwen/v1``); Gemini CLI's model name is part of its paths.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, models: Mapping[str, ScriptedModel]) -> None:
        super().__init__((LOOPBACK, 0), _Handler)
        self.routes: dict[str, tuple[Dialect, ScriptedModel]] = {
            "/v1/messages": (AnthropicDialect(), models["claude"]),
            "/v1/messages/count_tokens": (AnthropicDialect(), models["claude"]),
            "/v1/responses": (OpenAIDialect(), models["codex"]),
            "/opencode/v1/chat/completions": (ChatCompletionsDialect(), models["opencode"]),
            "/qwen/v1/chat/completions": (ChatCompletionsDialect(), models["qwen"]),
        }
        self.gemini = (GeminiDialect(), models["gemini"])
        self.closing = threading.Event()
        """Set when the fake model closes: held requests (hang, stall) let go then."""

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def route(self, path: str) -> tuple[Dialect, ScriptedModel] | None:
        if path.startswith(GEMINI_PREFIX):
            return self.gemini
        return self.routes.get(path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked responses
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/v1/models":
            self._send(Reply(json=MODELS))
        else:
            self._send(Reply(status=404, json={"error": {"message": "not found"}}))

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True  # the body's end is unknown: the connection is spent
            self._send(Reply(status=400, json={"error": {"message": "bad content-length"}}))
            return
        raw = self.rfile.read(length) if length > 0 else b""
        route = self.server.route(urlsplit(self.path).path)
        if route is None:
            self._send(Reply(status=404, json={"error": {"message": "not found"}}))
            return
        dialect, model = route
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply, record = dialect.answer(urlsplit(self.path).path, headers, json_object(raw), model)
        model.record(record)
        self._send(reply)

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
