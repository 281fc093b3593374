"""The egress proxy: serves, from outside, the listening sockets a sandbox's pid 1 handed over.

Each listening socket was made inside the sandbox's network; accepted here, its connections
are the sandbox's, and what they are sent on to leaves from the orchestrator's network. A relay
(:class:`~.egress.Relay`) connects each connection to its upstream and, for an API, reads each
request's head to put the key back in place of its placeholder (the body and the answer pass
as they are; an upgraded connection, a websocket, passes as it is after its head). The forward
proxy reads one head: ``CONNECT host:port`` or a request for ``http://host[:port]/…``; an
endpoint it does not allow by name, or a name that leads to an address of this machine, its
LAN, a link-local or metadata address, is answered ``403`` with a line saying how to allow it,
and said once in a progress line.

Threads, one per direction of each connection, at most :data:`MOST_CONNECTIONS` connections at
once per session: the CLIs open a handful, and blocking sockets keep TLS and the HTTP framing
plain. Every head is read with a bound (:data:`MOST_HEAD`); a line the framing cannot read
closes the connection.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

from thirdshift._machine.sandbox.egress import Egress, Relay
from thirdshift._sandbox import Endpoint, endpoint

MOST_CONNECTIONS = 64
MOST_HEAD = 64 * 1024
MOST_LINE = 8 * 1024
CHUNK = 64 * 1024
CONNECT_SECONDS = 30.0
HEAD_SECONDS = 60.0


class Refused(Exception):
    """A request the proxy does not send on; the text says why, to the agent and in a line
    (once per reason; never for a host the Harness said it does without)."""

    def __init__(self, why: str, host: str = "") -> None:
        super().__init__(why)
        self.host = host


class EgressProxy:
    """Serves one sandboxed session's listening sockets until :meth:`close`."""

    def __init__(
        self,
        egress: Egress,
        report: Callable[[str], None],
        *,
        resolve: Callable[[str, int], list[str]] | None = None,
    ) -> None:
        self._egress = egress
        self._report = report
        self._resolve = resolve or _resolved
        self._lock = threading.Lock()
        self._listeners: list[socket.socket] = []
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._refused: set[str] = set()
        self._closed = False

    def serve(self, fds: list[int]) -> None:
        """Serve the listening sockets whose descriptors ``fds`` are, in the order of
        ``Egress.listening`` (this takes them over)."""
        roles: list[Relay | None] = [*self._egress.relays, None]
        for fd, role in zip(fds, roles, strict=True):
            listener = socket.socket(fileno=fd)
            self._listeners.append(listener)
            self._start(self._accepting, listener, role)

    def close(self) -> None:
        """Stop serving: listeners and open connections shut, their threads ended."""
        with self._lock:
            self._closed = True
            sockets = [*self._listeners, *self._open]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in list(self._threads):
            thread.join(5.0)
        for sock in sockets:
            sock.close()

    def _start(self, target: Callable[..., None], *args: object) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return thread

    def _accepting(self, listener: socket.socket, role: Relay | None) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # shut by close()
            with self._lock:
                if self._closed or len(self._open) >= MOST_CONNECTIONS:
                    conn.close()
                    continue
                self._open.add(conn)
            _no_delay(conn)
            self._start(self._serving, conn, role)

    def _serving(self, conn: socket.socket, role: Relay | None) -> None:
        link = _Link(conn)
        try:
            if role is None:
                self._forward(link)
            else:
                self._relay(link, role)
            if link.upstream is not None:
                # The agent's side has said all it will: the answer may still be coming.
                with contextlib.suppress(OSError):
                    link.upstream.shutdown(socket.SHUT_WR)
            if link.back is not None:
                link.back.join()
        except Refused as refused:
            self._refuse(conn, str(refused), quietly=refused.host in self._egress.quiet)
        except (OSError, ValueError):
            pass  # the agent's side, or the upstream, went away or spoke no HTTP
        finally:
            for sock in (conn, link.upstream):
                if sock is not None:
                    with self._lock:
                        self._open.discard(sock)
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                    sock.close()

    def _linked(self, link: _Link, upstream: socket.socket) -> None:
        """``upstream`` is the connection's other side: its answers flow back from now on."""
        with self._lock:
            self._open.add(upstream)
        link.upstream = upstream
        link.back = self._start(_pump, upstream, link.conn)

    # The two roles.

    def _relay(self, link: _Link, relay: Relay) -> None:
        self._linked(link, self._connect(relay.upstream))
        assert link.upstream is not None
        if relay.keys:
            _requests(Reader(link.conn), link.upstream, dict(relay.keys), _host_header(relay))
        else:
            _pump(link.conn, link.upstream)

    def _forward(self, link: _Link) -> None:
        reader = Reader(link.conn, HEAD_SECONDS)
        head = reader.head()
        method, target, version = _request_line(head)
        if method.upper() == b"CONNECT":
            self._linked(
                link, self._connect_allowed(_endpoint_of(target.decode("ascii", "replace")))
            )
            link.conn.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            parts = urlsplit(target.decode("ascii", "replace"))
            if parts.scheme != "http" or not parts.hostname:
                raise Refused(f"{target.decode('ascii', 'replace')[:200]} is no http:// URL")
            upstream = self._connect_allowed(Endpoint(parts.hostname.lower(), parts.port or 80))
            self._linked(link, upstream)
            origin = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            rest = head.split(b"\r\n", 1)[1]
            kept = b"\r\n".join(
                line for line in rest.split(b"\r\n") if not line.lower().startswith(b"proxy-")
            )
            upstream.sendall(b" ".join([method, origin.encode(), version]) + b"\r\n" + kept)
        assert link.upstream is not None
        link.conn.settimeout(None)
        link.upstream.sendall(reader.rest())
        _pump(link.conn, link.upstream)

    # Reaching out.

    def _connect_allowed(self, wanted: Endpoint) -> socket.socket:
        if wanted not in self._egress.allowed:
            raise Refused(f"{wanted} is not allowed", wanted.host)
        literal = _address(wanted.host)
        addresses = [wanted.host] if literal else self._resolve(wanted.host, wanted.port)
        public = [address for address in addresses if literal or _public(address)]
        if not public:
            raise Refused(f"{wanted} leads to no public address ({', '.join(addresses)})")
        return _no_delay(
            socket.create_connection((public[0], wanted.port), timeout=CONNECT_SECONDS)
        )

    def _connect(self, url: str) -> socket.socket:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 0  # both there: egress wrote the URL
        sock = _no_delay(socket.create_connection((host, port), timeout=CONNECT_SECONDS))
        sock.settimeout(None)
        if parts.scheme == "https":
            return ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        return sock

    def _refuse(self, conn: socket.socket, why: str, *, quietly: bool) -> None:
        text = (
            f"thirdshift sandbox: {why}; an endpoint is allowed with "
            "Sandbox(network=('host:port',)) or thirdshift run --allow-net host:port\n"
        )
        with self._lock:
            first = why not in self._refused
            self._refused.add(why)
        if first and not quietly:
            self._report(f"sandbox: refused a connection: {why}")
        answer = (
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            f"Content-Length: {len(text.encode())}\r\n\r\n{text}"
        )
        with contextlib.suppress(OSError):
            conn.sendall(answer.encode())


class _Link:
    """One connection of the agent's and, once connected, its upstream."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.upstream: socket.socket | None = None
        self.back: threading.Thread | None = None


class Reader:
    """Reads a socket in chunks, handing out heads, lines and bodies; bounded."""

    def __init__(self, sock: socket.socket, timeout: float | None = None) -> None:
        self.sock = sock
        self.sock.settimeout(timeout)
        self._buffer = b""

    def _more(self) -> bool:
        chunk = self.sock.recv(CHUNK)
        self._buffer += chunk
        return bool(chunk)

    def head(self) -> bytes:
        """Up to and with the blank line that ends a head; ``ValueError`` if none comes."""
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if len(self._buffer) > MOST_HEAD or not self._more():
                raise ValueError("no head")
        head, self._buffer = self._buffer[: end + 4], self._buffer[end + 4 :]
        return head

    def line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if len(self._buffer) > MOST_LINE or not self._more():
                raise ValueError("no line")
        line, self._buffer = self._buffer[: end + 2], self._buffer[end + 2 :]
        return line

    def some(self, most: int) -> bytes:
        """At most ``most`` bytes, at least one; ``ValueError`` at the end of the stream."""
        if not self._buffer and not self._more():
            raise ValueError("ended")
        taken, self._buffer = self._buffer[:most], self._buffer[most:]
        return taken

    def rest(self) -> bytes:
        taken, self._buffer = self._buffer, b""
        return taken


def _requests(
    reader: Reader, upstream: socket.socket, keys: dict[str, str], host: str | None
) -> None:
    """Send each request on to ``upstream`` with its head's placeholders replaced by the keys."""
    while True:
        try:
            head = reader.head()
        except ValueError:
            return  # the client closed between requests
        for placeholder, key in keys.items():
            head = head.replace(placeholder.encode(), key.encode())
        fields = _fields(head)
        if host is not None:
            head = _with_host(head, host)
        upstream.sendall(head)
        if b"upgrade" in fields.get(b"connection", b"").lower():
            upstream.sendall(reader.rest())
            _pump(reader.sock, upstream)
            return
        if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            _chunked(reader, upstream)
        else:
            _sized(reader, upstream, int(fields.get(b"content-length", b"0").strip() or 0))


def _sized(reader: Reader, upstream: socket.socket, size: int) -> None:
    if size < 0:
        raise ValueError("a negative length")
    while size > 0:
        data = reader.some(min(size, CHUNK))
        upstream.sendall(data)
        size -= len(data)


def _chunked(reader: Reader, upstream: socket.socket) -> None:
    while True:
        line = reader.line()
        upstream.sendall(line)
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (trailer := reader.line()) != b"\r\n":
                upstream.sendall(trailer)
            upstream.sendall(b"\r\n")
            return
        _sized(reader, upstream, size + 2)  # the data and its CRLF


def _fields(head: bytes) -> dict[bytes, bytes]:
    found: dict[bytes, bytes] = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            found[name.strip().lower()] = value.strip()
    return found


def _with_host(head: bytes, host: str) -> bytes:
    lines = head.split(b"\r\n")
    return b"\r\n".join(
        b"Host: " + host.encode() if line.lower().startswith(b"host:") else line for line in lines
    )


def _host_header(relay: Relay) -> str | None:
    """The Host a relay's requests must carry upstream: the upstream's, where the CLI was
    pointed at the relay instead (an API elsewhere); None where the address is the same."""
    parts = urlsplit(relay.upstream)
    default = 443 if parts.scheme == "https" else 80
    upstream = Endpoint((parts.hostname or "").lower(), parts.port or default)
    if upstream == relay.inside:
        return None
    return upstream.host if upstream.port == default else str(upstream)


def _request_line(head: bytes) -> tuple[bytes, bytes, bytes]:
    words = head.split(b"\r\n", 1)[0].split(b" ")
    if len(words) != 3:
        raise ValueError("not a request line")
    return words[0], words[1], words[2]


def _endpoint_of(text: str) -> Endpoint:
    try:
        return endpoint(text)
    except ValueError:
        raise Refused(f"{text[:200]!r} is no host:port") from None


def _address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _public(address: str) -> bool:
    """Whether ``address`` is out on the internet: not this machine, its LAN, link-local (the
    cloud metadata service's 169.254.169.254), multicast or reserved."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return ip.is_global and not ip.is_multicast


def _resolved(host: str, port: int) -> list[str]:
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def _no_delay(sock: socket.socket) -> socket.socket:
    """``sock`` sending each write at once: a relay writes a request's head and its body
    apart, and Nagle's algorithm would hold the second back for the first's acknowledgement
    (some 40 ms on Linux, per request)."""
    with contextlib.suppress(OSError):  # no TCP socket (a test's stand-in)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy ``source`` to ``target`` until it ends (then end ``target``'s writing side)."""
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        return
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
