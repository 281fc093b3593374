"""What a sandboxed session may reach beyond what it always gets: a value of the bottom layer.

A :class:`Sandbox` on a Choice (``thirdshift.claude(sandbox=thirdshift.Sandbox())``) runs each
of its sessions inside a boundary set up from outside the CLI, before it starts (see
``docs/security.md``): the system read-only, a private ``HOME`` and ``/tmp``, the worktree
read-write, no other process of the machine in sight, no network but the Harness's API
endpoints (reached through an egress proxy that puts the API key on the request on its way
out) and, capped by the session's cgroup, at most ``pids`` processes and ``memory`` bytes.
The value only says what to add to that; how the machine builds it is the adapter's
(:mod:`thirdshift._machine.sandbox`).
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MODEL_HOOK = "THIRDSHIFT_SANDBOX_MODEL"
"""The orchestrator's variable (never the CLI's) by which a testing toolkit's fake model adds
itself to every sandbox: comma-separated ``host:port`` of model servers on loopback, reached
through a relay that puts the Harness's keys back, as for its API."""
WRITE_HOOK = "THIRDSHIFT_SANDBOX_WRITE"
"""The orchestrator's variable by which a testing toolkit adds folders every sandboxed session
writes (the fake CLIs' state), separated by ``os.pathsep``."""
MIN_MEMORY = 1 << 20
"""The smallest memory cap taken: below a MiB no CLI can even start."""
DEFAULT_PORT = 443
DEFAULT_PIDS = 4096

# A host name as DNS spells one (letters, digits, hyphens, dots), or an IPv4 address; an IPv6
# address is written in brackets ("[::1]:8080"). No scheme, path, user or wildcard.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?")


@dataclass(frozen=True)
class Endpoint:
    """One ``host:port`` a sandboxed session may reach (``host`` lower-cased, no brackets)."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """Whether this is an address of the machine itself (``127.0.0.1``, ``::1``,
        ``localhost``): it answers at the same address inside the sandbox."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def endpoint(text: str) -> Endpoint:
    """``"host:port"``, ``"host"`` (port 443) or ``"[v6]:port"`` as an :class:`Endpoint`;
    a ``ValueError`` saying what is wrong otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"a Sandbox network endpoint is a 'host:port' text, not {text!r}")
    if "/" in text or "@" in text:
        raise ValueError(
            f"network endpoint {text!r} is not 'host' or 'host:port' (no scheme, path or user)"
        )
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"network endpoint {text!r}: write an IPv6 address as '[addr]:port'")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"network endpoint {text!r}: {host!r} is no IPv6 address") from None
        has_port, port_text = bool(rest), rest[1:]
    else:
        host, colon, port_text = text.rpartition(":") if ":" in text else (text, "", "")
        has_port = bool(colon)
        if ":" in host:
            raise ValueError(f"network endpoint {text!r}: write an IPv6 address as '[addr]:port'")
        if not _HOST_NAME.fullmatch(host):
            raise ValueError(
                f"network endpoint {text!r} is not 'host' or 'host:port' "
                "(a name or an address: no scheme, path or wildcard)"
            )
    port = DEFAULT_PORT
    if has_port:
        if not (port_text.isascii() and port_text.isdigit() and 1 <= int(port_text) <= 65535):
            raise ValueError(f"network endpoint {text!r}: the port must be 1 to 65535")
        port = int(port_text)
    return Endpoint(host.lower().rstrip("."), port)


def _paths(what: str, given: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    if isinstance(given, str | bytes | os.PathLike):
        raise TypeError(f"Sandbox {what} is a sequence of paths, not one path: ({given!r},)")
    paths = []
    for item in given:
        if not isinstance(item, str | os.PathLike):
            raise TypeError(f"Sandbox {what} holds paths, not {item!r}")
        path = Path(item)
        if not path.is_absolute():
            raise ValueError(f"Sandbox {what} path {str(path)!r} must be absolute")
        if "\0" in str(path):
            raise ValueError(f"Sandbox {what} path {str(path)!r} holds a NUL")
        paths.append(str(path))
    return tuple(paths)


def _cap(name: str, value: object, least: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"Sandbox {name} must be None or a whole number, not {value!r}")
    if value < least:
        raise ValueError(f"Sandbox {name} must be at least {least}, not {value}")


@dataclass(frozen=True)
class Sandbox:
    """Run each session inside a boundary; what to add to what the session always sees.

    ``network`` adds endpoints the session may reach (``"host:port"``; ``"host"`` means port
    443) beyond its Harness's own API endpoints; ``read`` and ``write`` add absolute paths the
    session sees read-only and read-write (kept as texts, so that the value travels as JSON, in
    a fleet's request). ``pids`` caps how many processes the session may
    have at once and ``memory`` how many bytes they may use together (``None``: no cap), through
    the session's cgroup. Checked here: a malformed endpoint, a relative path, ``pids`` below 1
    or ``memory`` below 1 MiB is a ``ValueError``.
    """

    network: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    pids: int | None = DEFAULT_PIDS
    memory: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.network, str):
            raise TypeError(
                f"Sandbox network is a sequence of endpoints, not one text: ({self.network!r},)"
            )
        endpoints = tuple(self.network)
        for text in endpoints:
            endpoint(text)  # refused here, not once a session starts
        object.__setattr__(self, "network", endpoints)
        object.__setattr__(self, "read", _paths("read", self.read))
        object.__setattr__(self, "write", _paths("write", self.write))
        _cap("pids", self.pids, 1)
        _cap("memory", self.memory, MIN_MEMORY)

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """``network`` parsed."""
        return tuple(endpoint(text) for text in self.network)


def checked_sandbox(value: object) -> Sandbox | None:
    """``value`` if it is a :class:`Sandbox` or None; a ``TypeError`` otherwise."""
    if value is None or isinstance(value, Sandbox):
        return value
    raise TypeError(f"sandbox must be a thirdshift.Sandbox or None, not {value!r}")


@dataclass(frozen=True)
class StateFolder:
    """A folder of a CLI's own state (its configuration, logins, sessions), as a Harness
    declares it for the sandbox: the session sees a private copy, kept across the calls in one
    worktree so that a Resume finds its session, of which ``copied`` (paths relative to the
    folder: configuration and credentials, never another project's sessions) is taken afresh
    from the user's own before each call. ``default`` is relative to ``HOME`` (``""``: HOME
    itself); ``variable`` names an environment variable that puts it elsewhere."""

    default: str
    copied: tuple[str, ...] = ()
    variable: str | None = None


@dataclass(frozen=True)
class Api:
    """A model API a Harness's CLI calls: its default ``url``, the variable that sets another
    (``base_url_variable``), and the variables that hold its keys (``key_variables``). In a
    sandbox the keys stay outside: the CLI gets a placeholder, and the egress proxy puts the
    key back on each request to this API."""

    url: str
    base_url_variable: str | None = None
    key_variables: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxNeeds:
    """What a Harness's CLI needs inside a sandbox: its ``state`` folders, the ``apis`` it
    calls (each reachable, with its keys put back on the way out), and further ``endpoints``
    (``host[:port]``, reached by name with no key: a sign-in's token refresh). ``unneeded``
    are hosts it reaches for on every start and does well without (an update check): refused
    like any other, but not said in a progress line each time."""

    state: tuple[StateFolder, ...] = ()
    apis: tuple[Api, ...] = ()
    endpoints: tuple[str, ...] = ()
    unneeded: tuple[str, ...] = ()
