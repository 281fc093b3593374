"""What the sandbox costs: a session, and a request through the egress proxy (``make bench``).

- **session**: one session of the fake Claude that says one line, through ``Sessions.within``
  and the real adapter, with ``Sandbox()`` against without, in pairs whose order alternates
  (this machine's noise between identical runs is far above the difference sought, so only
  paired differences mean anything); the median of the paired differences and of the ratios;
- **request**: one HTTP request and its answer, from a client to a server on 127.0.0.1, through
  a relay of the egress proxy (the key put back on its head) against straight to the server,
  over one kept-alive connection each, interleaved the same way.

Each figure is measured in one run, against its own baseline; nothing is compared to a fixed
threshold. ``--pairs`` and ``--requests`` make it smaller (the suite's smoke run).
"""

from __future__ import annotations

import argparse
import http.server
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from results_block import write_block  # bench/: first on sys.path when run as a script

from thirdshift import Logs, Sandbox, Sessions, claude
from thirdshift._machine.sandbox.bwrap import unavailable
from thirdshift._machine.sandbox.egress import egress
from thirdshift._machine.sandbox.proxy import EgressProxy
from thirdshift._sandbox import Api, SandboxNeeds
from thirdshift.testing.fakecli import FakeCLIs
from thirdshift.testing.steps import say

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def session_seconds(fakes: FakeCLIs, folder: Path, sandbox: Sandbox | None, index: int) -> float:
    fakes.claude.script(say("hello"))
    worktree = folder / "worktree"
    worktree.mkdir(exist_ok=True)
    began = time.perf_counter()
    with Sessions.within(
        Logs(folder / "logs", f"bench{index}"),
        worktree,
        claude(sandbox=sandbox),
        progress=lambda _: None,
    ) as sessions:
        sessions.run("hello", "Say hello.")
    return time.perf_counter() - began


def sessions(pairs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="thirdshift-bench-") as name:
        folder = Path(name)
        fakes = FakeCLIs.create(folder / "fakes")
        saved = dict(os.environ)
        os.environ.update(fakes.env())
        os.environ["HOME"] = str(folder / "home")
        (folder / "home").mkdir()
        try:
            session_seconds(fakes, folder, Sandbox(), 0)  # warm: bytecode, the bwrap probe
            session_seconds(fakes, folder, None, 0)
            differences, ratios = [], []
            for index in range(pairs):
                order = (Sandbox(), None) if index % 2 == 0 else (None, Sandbox())
                taken = {
                    box is not None: session_seconds(fakes, folder, box, index) for box in order
                }
                differences.append(taken[True] - taken[False])
                ratios.append(taken[True] / taken[False])
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return {
        "pairs": pairs,
        "median_ms": statistics.median(differences) * 1000,
        "min_ms": min(differences) * 1000,
        "max_ms": max(differences) * 1000,
        "ratio": statistics.median(ratios),
    }


class _Answer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as a model API's server; else both paths wait on Nagle

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def _request(client: socket.socket, body: bytes, key: str) -> float:
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\n"
    began = time.perf_counter()
    client.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    answer = b""
    while not answer.endswith(body):
        answer += client.recv(65536)
    return time.perf_counter() - began


def requests(count: int) -> dict[str, float]:
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        needs = SandboxNeeds(apis=(Api("https://api.example.com", "BASE", ("KEY",)),))
        env = {"KEY": "sk-real", "BASE": f"http://127.0.0.1:{port}"}
        reached = egress(needs, Sandbox(), env, {})
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        relay_port = listener.getsockname()[1]
        proxy_listener = socket.socket()
        proxy_listener.bind(("127.0.0.1", 0))
        proxy_listener.listen()
        proxy = EgressProxy(reached, lambda _: None)
        proxy.serve([listener.detach(), proxy_listener.detach()])
        body = b"x" * 2048  # a small request, as most of a session's are
        try:
            with (
                socket.create_connection(("127.0.0.1", port)) as direct,
                socket.create_connection(("127.0.0.1", relay_port)) as relayed,
            ):
                placeholder = reached.env["KEY"]
                differences = []
                for index in range(count):
                    if index % 2 == 0:
                        through = _request(relayed, body, placeholder)
                        straight = _request(direct, body, "sk-real")
                    else:
                        straight = _request(direct, body, "sk-real")
                        through = _request(relayed, body, placeholder)
                    differences.append(through - straight)
        finally:
            proxy.close()
            server.shutdown()
    return {"requests": count, "median_us": statistics.median(differences) * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=24)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if unavailable() is not None:
        print(f"sandbox: skipped, as this machine cannot sandbox: {unavailable()}")
        return 0
    session = sessions(args.pairs)
    request = requests(args.requests)
    text = "\n".join(
        [
            "| what | paired runs | sandboxed minus not (median) | min / max | median ratio |",
            "| --- | --- | --- | --- | --- |",
            f"| a fake-Claude session | {session['pairs']} | {session['median_ms']:.0f} ms | "
            f"{session['min_ms']:.0f} / {session['max_ms']:.0f} ms | {session['ratio']:.2f} |",
            f"| a request through the proxy's relay | {request['requests']} | "
            f"{request['median_us']:.0f} µs | | |",
        ]
    )
    print(text)
    if not args.no_write:
        write_block(RESULTS, "sandbox", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
