"""Whom the fake model answers, and how much it takes: the key its ``env()`` hands out, its own
address as the Host, bodies and connections within their caps (issue 15, item 6)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from thirdshift.testing.fakemodel import FakeModel

MiB = 1024 * 1024


@dataclass(frozen=True)
class Api:
    """One CLI's route on the fake model, a request it takes, and what its 401 looks like."""

    cli: str
    path: str
    body: dict[str, Any]
    shapes: tuple[str, ...]
    """How the real CLI sends its key (seen in the conformance runs)."""
    refused: Callable[[Any], bool]
    """Whether a JSON body is this API's authentication error."""


def _anthropic_auth_error(body: Any) -> bool:
    return bool(body["type"] == "error" and body["error"]["type"] == "authentication_error")


def _openai_auth_error(body: Any) -> bool:
    return bool(body["error"]["code"] == "invalid_api_key" and body["error"]["message"])


def _google_auth_error(body: Any) -> bool:
    return bool(body["error"]["code"] == 401 and body["error"]["status"] == "UNAUTHENTICATED")


CHAT = {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}
APIS = {
    api.cli: api
    for api in (
        Api(
            "claude",
            "/v1/messages",
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            ("x-api-key", "bearer"),
            _anthropic_auth_error,
        ),
        Api(
            "codex",
            "/v1/responses",
            {"model": "gpt-5.5", "input": [], "stream": True},
            ("bearer",),
            _openai_auth_error,
        ),
        Api("opencode", "/opencode/v1/chat/completions", CHAT, ("bearer",), _openai_auth_error),
        Api("qwen", "/qwen/v1/chat/completions", CHAT, ("bearer",), _openai_auth_error),
        Api(
            "gemini",
            "/v1beta/models/gemini-3-pro:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            ("x-goog-api-key",),
            _google_auth_error,
        ),
    )
}
SHAPES = ("x-api-key", "bearer", "x-goog-api-key")


def carrying(shape: str, key: str) -> dict[str, str]:
    if shape == "bearer":
        return {"authorization": f"Bearer {key}"}
    return {shape: key}


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as started:
        yield started


def port_of(model: FakeModel) -> int:
    return int(model.url.rsplit(":", 1)[1])


def key_of(model: FakeModel, tmp_path: Path) -> str:
    """The key as a CLI gets it: from the environment ``env()`` makes."""
    return model.env(tmp_path / f"home-{port_of(model)}", base={})["ANTHROPIC_API_KEY"]


def post(
    model: FakeModel, path: str, body: dict[str, Any], headers: dict[str, str]
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port_of(model), timeout=30)
    connection.request("POST", path, json.dumps(body), headers)
    return connection.getresponse()


def raw_request(model: FakeModel, head: bytes) -> tuple[http.client.HTTPResponse, socket.socket]:
    """Send ``head`` (a request line and headers, written by hand) and read the answer's head."""
    connection = socket.create_connection(("127.0.0.1", port_of(model)), timeout=30)
    connection.sendall(head)
    response = http.client.HTTPResponse(connection)
    response.begin()
    return response, connection


@pytest.mark.parametrize(
    ("cli", "shape"), [(api.cli, shape) for api in APIS.values() for shape in api.shapes]
)
def test_each_api_answers_its_key_in_each_shape_its_real_cli_sends_it(
    model: FakeModel, tmp_path: Path, cli: str, shape: str
) -> None:
    api = APIS[cli]
    response = post(model, api.path, api.body, carrying(shape, key_of(model, tmp_path)))
    assert response.status == 200
    response.read()
    assert len(getattr(model, cli).requests) == 1


def wrong_credentials(api: Api, key: str) -> list[tuple[str, dict[str, str]]]:
    """What must not pass: no key, a wrong one, the key where this API's CLI does not put it."""
    wrong: list[tuple[str, dict[str, str]]] = [("", {})]
    for shape in api.shapes:
        for other in ("", "thirdshift-fake-model-key", key[:-1], key + "0", key.upper()):
            wrong.append(("", carrying(shape, other)))
    wrong.extend(("", carrying(shape, key)) for shape in SHAPES if shape not in api.shapes)
    if "bearer" in api.shapes:
        for value in (key, f"Basic {key}", f"Bearer {key} {key}", f"Bearer{key}"):
            wrong.append(("", {"authorization": value}))
    wrong.append((f"?key={key}", {}))  # no pinned CLI sends its key in the query
    return wrong


@pytest.mark.parametrize("cli", APIS)
def test_a_request_without_the_key_gets_its_apis_401_and_is_neither_answered_nor_recorded(
    model: FakeModel, tmp_path: Path, cli: str
) -> None:
    api = APIS[cli]
    getattr(model, cli).script()  # a scripted answer that a stranger must not take
    for query, headers in wrong_credentials(api, key_of(model, tmp_path)):
        response = post(model, api.path + query, api.body, headers)
        assert response.status == 401, (query, headers)
        assert api.refused(json.loads(response.read())), (query, headers)
    assert getattr(model, cli).requests == []
    assert model.problems() == [f"{cli}: a script was never used: no steps"]


def test_a_credential_header_sent_twice_is_refused(model: FakeModel, tmp_path: Path) -> None:
    key = key_of(model, tmp_path)
    api = APIS["claude"]
    head = (
        f"POST {api.path} HTTP/1.1\r\nHost: 127.0.0.1:{port_of(model)}\r\n"
        f"x-api-key: {key}\r\nx-api-key: other\r\nContent-Length: 0\r\n\r\n"
    )
    response, connection = raw_request(model, head.encode())
    with connection:
        assert response.status == 401
        assert api.refused(json.loads(response.read()))


def test_each_fake_model_has_a_key_of_its_own(tmp_path: Path) -> None:
    with FakeModel() as first, FakeModel() as second:
        assert key_of(first, tmp_path) != key_of(second, tmp_path)
        api = APIS["claude"]
        response = post(second, api.path, api.body, {"x-api-key": key_of(first, tmp_path)})
        assert response.status == 401
        assert second.claude.requests == []


def test_the_model_list_wants_the_key_too(model: FakeModel, tmp_path: Path) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port_of(model), timeout=30)
    connection.request("GET", "/v1/models")
    refused = connection.getresponse()
    assert refused.status == 401
    assert _openai_auth_error(json.loads(refused.read()))
    connection.request("GET", "/v1/models", headers=carrying("bearer", key_of(model, tmp_path)))
    listed = connection.getresponse()
    assert listed.status == 200
    assert json.loads(listed.read())["models"] == []


def test_the_key_env_hands_out_is_the_models_own_in_every_place_a_cli_reads_it(
    model: FakeModel, tmp_path: Path
) -> None:
    env = model.env(tmp_path / "home", base={})
    assert model.key.startswith("thirdshift-fake-")
    for name in ("ANTHROPIC_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY"):
        assert env[name] == model.key, name
    opencode = json.loads((tmp_path / "home/.config/opencode/opencode.json").read_text())
    assert opencode["provider"]["thirdshift-fake"]["options"]["apiKey"] == model.key
    subscriber = model.env(tmp_path / "home", base={}, subscriber=True)
    assert subscriber["CLAUDE_CODE_OAUTH_TOKEN"] == model.key


def hosts_that_are_not_its_own(port: int) -> list[str | None]:
    return [
        f"rebound.example:{port}",
        f"localhost:{port}",
        f"127.0.0.1:{port + 1}",
        "127.0.0.1",
        f"127.0.0.1:{port}.evil",
        None,  # no Host at all
    ]


@pytest.mark.parametrize("with_key", [True, False], ids=["with-key", "without-key"])
def test_a_host_that_is_not_its_own_address_is_refused_421(
    model: FakeModel, tmp_path: Path, with_key: bool
) -> None:
    key = key_of(model, tmp_path)
    api = APIS["claude"]
    body = json.dumps(api.body)
    for host in hosts_that_are_not_its_own(port_of(model)):
        head = f"POST {api.path} HTTP/1.1\r\n"
        head += f"Host: {host}\r\n" if host is not None else ""
        head += f"x-api-key: {key}\r\n" if with_key else ""
        head += f"Content-Length: {len(body)}\r\n\r\n{body}"
        response, connection = raw_request(model, head.encode())
        with connection:
            assert response.status == 421, host
            answer = json.loads(response.read())
            assert answer["type"] == "error", host
    assert model.claude.requests == []


def test_two_host_headers_are_refused_even_if_one_is_its_own(
    model: FakeModel, tmp_path: Path
) -> None:
    port = port_of(model)
    head = (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: rebound.example:{port}\r\n"
        f"x-api-key: {key_of(model, tmp_path)}\r\nContent-Length: 0\r\n\r\n"
    )
    response, connection = raw_request(model, head.encode())
    with connection:
        assert response.status == 421
    assert model.claude.requests == []


def oversized_head(model: FakeModel, key: str, length: int) -> bytes:
    return (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port_of(model)}\r\n"
        f"x-api-key: {key}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def test_a_body_over_the_default_cap_is_refused_413_before_it_is_sent(
    model: FakeModel, tmp_path: Path
) -> None:
    # Not a byte of the 60 MiB is sent: the answer comes from the Content-Length alone.
    response, connection = raw_request(
        model, oversized_head(model, key_of(model, tmp_path), 60 * MiB)
    )
    with connection:
        assert response.status == 413
        answer = json.loads(response.read())
        assert answer["error"]["type"] == "request_too_large"
        assert response.getheader("connection") == "close"
        assert connection.recv(1) == b""  # and the connection is closed: its end is unknown
    assert model.claude.requests == []


def test_max_body_is_the_largest_body_taken(tmp_path: Path) -> None:
    with FakeModel(max_body=1000) as model:
        key = key_of(model, tmp_path)
        api = APIS["claude"]
        text = json.dumps(api.body)
        exactly = text[:-1] + " " * (1000 - len(text)) + "}"
        for body, status in ((exactly, 200), (exactly + " ", 413)):
            connection = http.client.HTTPConnection("127.0.0.1", port_of(model), timeout=30)
            connection.request("POST", api.path, body, {"x-api-key": key})
            response = connection.getresponse()
            assert response.status == status
            response.read()
        assert len(model.claude.requests) == 1


def test_an_oversized_body_without_the_key_is_refused_401_unread(model: FakeModel) -> None:
    response, connection = raw_request(model, oversized_head(model, "wrong", 60 * MiB))
    with connection:
        assert response.status == 401


def test_a_refused_body_within_the_cap_is_drained_and_the_connection_kept(
    model: FakeModel, tmp_path: Path
) -> None:
    # A CLI with a wrong key sends its whole request (Claude's are ~120 KB) and then reads the
    # answer: it must read the 401, not a reset, and may go on using the connection.
    api = APIS["claude"]
    big = {**api.body, "system": "x" * 300_000}
    connection = http.client.HTTPConnection("127.0.0.1", port_of(model), timeout=30)
    connection.request("POST", api.path, json.dumps(big), {"x-api-key": "wrong"})
    refused = connection.getresponse()
    assert refused.status == 401
    refused.read()
    connection.request(
        "POST", api.path, json.dumps(api.body), {"x-api-key": key_of(model, tmp_path)}
    )
    assert connection.getresponse().status == 200


def open_served(model: FakeModel, key: str) -> http.client.HTTPConnection:
    """A keep-alive connection the fake model has taken (it answered a request on it)."""
    connection = http.client.HTTPConnection("127.0.0.1", port_of(model), timeout=30)
    connection.request("GET", "/v1/models", headers=carrying("bearer", key))
    response = connection.getresponse()
    assert response.status == 200
    response.read()
    return connection


def served_now(model: FakeModel, key: str) -> bool:
    """Whether a new connection is served now (not turned away with a 503, or reset by it)."""
    connection = http.client.HTTPConnection("127.0.0.1", port_of(model), timeout=30)
    try:
        connection.request("GET", "/v1/models", headers=carrying("bearer", key))
        return connection.getresponse().status == 200
    except ConnectionError:
        return False
    finally:
        connection.close()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize(("given", "cap"), [(None, 64), (3, 3)], ids=["default", "given"])
def test_connections_over_the_cap_are_answered_503_until_one_closes(
    tmp_path: Path, given: int | None, cap: int
) -> None:
    started = FakeModel() if given is None else FakeModel(max_connections=given)
    with started as model, ExitStack() as held:
        key = key_of(model, tmp_path)
        served = [open_served(model, key) for _ in range(cap)]
        for connection in served:
            held.callback(connection.close)
        # A new connection is refused at once, without waiting for its request to come.
        with socket.create_connection(("127.0.0.1", port_of(model)), timeout=5) as extra:
            response = http.client.HTTPResponse(extra)
            response.begin()
            assert response.status == 503
            assert response.getheader("connection") == "close"
            assert json.loads(response.read())["error"]["message"]
            assert extra.recv(1) == b""
        assert not served_now(model, key)
        served.pop().close()
        wait_for(lambda: served_now(model, key), "the slot of a closed connection")


def test_caps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_body must be at least 1, got 0"):
        FakeModel(max_body=0)
    with pytest.raises(ValueError, match="max_connections must be at least 1, got -1"):
        FakeModel(max_connections=-1)


SERVER = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from thirdshift.testing.fakemodel import FakeModel

    with FakeModel() as model:
        key = model.env(Path(sys.argv[1]), base={})["ANTHROPIC_API_KEY"]
        print(model.url, key, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
        sys.stdin.readline()  # the bodies were sent
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
    """
)


def send_body(port: int, key: str, size: int) -> None:
    """Send a ``size``-byte body whole (unless the server closes first); read what comes back."""
    chunk = b" " * MiB
    head = (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: {key}\r\n"
        f"Content-Length: {size}\r\n\r\n"
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
            connection.sendall(head.encode())
            for _ in range(size // MiB):
                connection.sendall(chunk)
            while connection.recv(65536):
                pass
    except OSError:
        pass  # refused early: the server closed while the body was still coming


def test_six_bodies_of_60_mib_do_not_grow_the_servers_memory(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(tmp_path / "home")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        assert server.stdin is not None
        url, key, before = server.stdout.readline().split()
        port = int(url.rsplit(":", 1)[1])
        senders = [threading.Thread(target=send_body, args=(port, key, 60 * MiB)) for _ in range(6)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        server.stdin.write("done\n")
        server.stdin.flush()
        after = server.stdout.readline()
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    grown_kib = int(after) - int(before)  # ru_maxrss is in KiB on Linux
    assert grown_kib < 32 * 1024, f"the server's peak RSS grew by {grown_kib} KiB"
