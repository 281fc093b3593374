"""The egress proxy, in-process: listening sockets made here stand for the ones a sandbox's pid 1
hands over, and an HTTP server on 127.0.0.1 for the model API."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from thirdshift import Sandbox
from thirdshift._machine.sandbox.egress import Egress, egress
from thirdshift._machine.sandbox.proxy import EgressProxy
from thirdshift._sandbox import Api, Endpoint, SandboxNeeds

KEY = "sk-real-key-0123456789"


class _Api(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the CLIs' clients use it
    seen: list[tuple[str, str, bytes]]

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding") == "chunked":
            body = b""
            while size := int(self.rfile.readline().strip(), 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append((self.path, self.headers.get("x-api-key", ""), body))
        answer = b"ok " + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def api() -> Iterator[tuple[int, list[tuple[str, str, bytes]]]]:
    seen: list[tuple[str, str, bytes]] = []
    handler = type("Handler", (_Api,), {"seen": seen})
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.server_address[1], seen
        server.shutdown()


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


class Served:
    """An EgressProxy serving listeners made here; ``relay`` and ``proxy`` their ports."""

    def __init__(self, reached: Egress, **settings: object) -> None:
        self.lines: list[str] = []
        listeners = [_listener() for _ in reached.listening]
        self.ports = [sock.getsockname()[1] for sock in listeners]
        self.proxy = EgressProxy(reached, self.lines.append, **settings)  # type: ignore[arg-type]
        self.proxy.serve([sock.detach() for sock in listeners])

    def connect(self, index: int) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.ports[index]), timeout=10)


def _answers(sock: socket.socket, count: int) -> list[bytes]:
    """``count`` answers of Content-Length bodies, read off ``sock``."""
    stream, bodies = b"", list[bytes]()
    while len(bodies) < count:
        while b"\r\n\r\n" not in stream:
            stream += sock.recv(65536)
        head, stream = stream.split(b"\r\n\r\n", 1)
        size = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(stream) < size:
            stream += sock.recv(65536)
        bodies.append(stream[:size])
        stream = stream[size:]
    return bodies


NEEDS = SandboxNeeds(apis=(Api("https://api.example.com", "API_BASE_URL", ("API_KEY",)),))


def test_a_relay_puts_the_key_back_on_every_request_and_nothing_else_changes(
    api: tuple[int, list[tuple[str, str, bytes]]],
) -> None:
    port, seen = api
    reached = egress(
        NEEDS, Sandbox(), {"API_KEY": KEY, "API_BASE_URL": f"http://127.0.0.1:{port}"}, {}
    )
    placeholder = reached.env["API_KEY"]
    served = Served(reached)
    try:
        with served.connect(0) as client:
            client.sendall(
                f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {placeholder}\r\n"
                f"Content-Length: {len(placeholder)}\r\n\r\n{placeholder}".encode()
                + f"POST /v1/again HTTP/1.1\r\nHost: x\r\nx-api-key: {placeholder}\r\n"
                "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".encode()
            )
            answers = _answers(client, 2)
    finally:
        served.proxy.close()

    assert [(path, key) for path, key, _ in seen] == [("/v1/messages", KEY), ("/v1/again", KEY)]
    assert [body for _, _, body in seen] == [placeholder.encode(), b"abcde"]  # bodies as sent
    assert answers == [b"ok " + placeholder.encode(), b"ok abcde"]


def test_the_forward_proxy_refuses_what_is_not_allowed_and_says_so_once() -> None:
    served = Served(egress(SandboxNeeds(), Sandbox(), {}, {}))
    try:
        answers = []
        for _ in range(2):
            with served.connect(0) as client:
                client.sendall(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n")
                answers.append(client.recv(4096).decode())
    finally:
        served.proxy.close()

    assert all(answer.startswith("HTTP/1.1 403 Forbidden\r\n") for answer in answers)
    assert "Sandbox(network=('host:port',))" in answers[0]
    assert served.lines == ["sandbox: refused a connection: example.com:443 is not allowed"]


def test_the_forward_proxy_tunnels_to_an_allowed_endpoint(
    api: tuple[int, list[tuple[str, str, bytes]]],
) -> None:
    port, seen = api
    # An address allowed as an address is connected to as given (the test's server stands in
    # for one out on the internet: egress() itself relays a loopback endpoint instead).
    allowed = Endpoint("127.0.0.1", port)
    served = Served(Egress(relays=(), proxy=allowed, allowed=frozenset({allowed}), env={}))
    try:
        with served.connect(0) as client:
            client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert client.recv(4096) == b"HTTP/1.1 200 Connection Established\r\n\r\n"
            client.sendall(b"POST /tunnelled HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            answers = _answers(client, 1)
    finally:
        served.proxy.close()

    assert answers == [b"ok hi"]
    assert seen == [("/tunnelled", "", b"hi")]


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "10.1.2.3", "::1"])
def test_an_allowed_name_that_leads_to_no_public_address_is_refused(address: str) -> None:
    served = Served(
        egress(SandboxNeeds(), Sandbox(network=("api.example.com",)), {}, {}),
        resolve=lambda _host, _port: [address],
    )
    try:
        with served.connect(0) as client:
            client.sendall(b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n")
            answer = client.recv(4096).decode()
    finally:
        served.proxy.close()

    assert answer.startswith("HTTP/1.1 403 Forbidden\r\n")
    assert f"leads to no public address ({address})" in answer


def test_a_host_the_cli_does_without_is_refused_without_a_line() -> None:
    needs = SandboxNeeds(unneeded=("updates.example.com",))
    served = Served(egress(needs, Sandbox(), {}, {}))
    try:
        with served.connect(0) as client:
            client.sendall(b"CONNECT updates.example.com:443 HTTP/1.1\r\n\r\n")
            answer = client.recv(4096).decode()
    finally:
        served.proxy.close()

    assert answer.startswith("HTTP/1.1 403 Forbidden\r\n")
    assert served.lines == []


def test_a_plain_http_request_through_the_proxy_is_held_to_the_same_rule() -> None:
    served = Served(egress(SandboxNeeds(), Sandbox(), {}, {}))
    try:
        with served.connect(0) as client:
            client.sendall(b"GET http://metadata.internal/latest HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = client.recv(4096).decode()
    finally:
        served.proxy.close()

    assert answer.startswith("HTTP/1.1 403 Forbidden\r\n")
    assert served.lines == ["sandbox: refused a connection: metadata.internal:80 is not allowed"]


def test_garbage_closes_the_connection_and_the_proxy_serves_on() -> None:
    served = Served(egress(SandboxNeeds(), Sandbox(), {}, {}))
    try:
        with served.connect(0) as client:
            client.sendall(b"\x00" * 70000)  # no head ever ends
            assert client.recv(4096) == b""
        with served.connect(0) as client:
            client.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
            assert client.recv(4096).startswith(b"HTTP/1.1 403")
    finally:
        served.proxy.close()
