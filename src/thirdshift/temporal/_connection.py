"""How ``thirdshift worker`` reaches its Temporal server: as the ``temporal`` CLI does.

The connection comes from Temporal's environment configuration (:mod:`temporalio.envconfig`:
``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, the ``TEMPORAL_TLS_*``
variables, and a profile of its TOML file, ``TEMPORAL_PROFILE`` or ``--profile``), then the
flags over it. An address without a port means Temporal's 7233. A server that cannot be reached
yet (a worker started at boot, before it) is tried again with a growing wait, a line each time,
up to a deadline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.client import Client, Interceptor, Plugin
from temporalio.envconfig import ClientConfigProfile, ClientConfigTLS
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

DEFAULT_ADDRESS = "localhost:7233"
"""Where the ``temporal`` CLI looks when nothing says otherwise (``temporal server start-dev``)."""
DEFAULT_PORT = 7233
FIRST_WAIT = 1.0
LONGEST_WAIT = 30.0
# What no second try cures: credentials refused, a request the server will never take.
_FOR_GOOD = frozenset(
    {
        RPCStatusCode.UNAUTHENTICATED,
        RPCStatusCode.PERMISSION_DENIED,
        RPCStatusCode.INVALID_ARGUMENT,
        RPCStatusCode.NOT_FOUND,
    }
)


class ConnectionRefused(Exception):
    """The connection could not be made as asked, or not in time; the message is one line."""


@dataclass(frozen=True)
class Connection:
    """Where the worker's server is and how to reach it."""

    address: str
    namespace: str = "default"
    api_key: str | None = None
    tls: bool | TLSConfig = False
    rpc_metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def guarded(self) -> bool:
        """Whether the frontend is reached with TLS or an API key: without either, whoever
        can connect to it can send this worker sessions to run."""
        return self.tls is not False or self.api_key is not None

    def options(self) -> dict[str, Any]:
        """``Client.connect``'s keyword arguments."""
        options: dict[str, Any] = {"namespace": self.namespace, "tls": self.tls}
        if self.api_key is not None:
            options["api_key"] = self.api_key
        if self.rpc_metadata:
            options["rpc_metadata"] = dict(self.rpc_metadata)
        return options


def with_port(address: str) -> str:
    """``address`` with Temporal's port 7233 where it names none (``HOST``, ``[::1]``)."""
    if address.startswith("["):
        return address if re.fullmatch(r"\[[^\]]*\]:\d+", address) else f"{address}:{DEFAULT_PORT}"
    if address.count(":") == 1:
        return address
    if ":" in address:  # a bare IPv6 address
        return f"[{address}]:{DEFAULT_PORT}"
    return f"{address}:{DEFAULT_PORT}"


def connection(
    *,
    address: str | None = None,
    namespace: str | None = None,
    profile: str | None = None,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    tls_ca: Path | None = None,
    api_key_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Connection:
    """The connection Temporal's configuration (``env``: this process's by default) and
    ``profile`` give, with each flag given over it. A ``ConnectionRefused`` for a profile that
    does not exist, or a file that cannot be read."""
    try:
        loaded = ClientConfigProfile.load(profile=profile, override_env_vars=env)
    except Exception as error:  # the SDK's own ConfigError, for a profile or file refused
        raise ConnectionRefused(f"Temporal's configuration: {error}") from error
    tls = loaded.tls or ClientConfigTLS()
    if tls_cert is not None:
        tls = dataclasses.replace(tls, client_cert=_readable(tls_cert))
    if tls_key is not None:
        tls = dataclasses.replace(tls, client_private_key=_readable(tls_key))
    if tls_ca is not None:
        tls = dataclasses.replace(tls, server_root_ca_cert=_readable(tls_ca))
    api_key = loaded.api_key
    if api_key_file is not None:
        api_key = _readable(api_key_file).decode(errors="replace").strip()
        if not api_key:
            raise ConnectionRefused(f"--api-key-file {api_key_file} holds no key")
    chosen_tls: bool | TLSConfig
    flags = any(path is not None for path in (tls_cert, tls_key, tls_ca))
    if tls.disabled is True:
        chosen_tls = False
    elif loaded.tls is not None or flags:
        chosen_tls = tls.to_connect_tls_config()
    else:
        chosen_tls = api_key is not None  # an API key goes over TLS, as the SDK does
    return Connection(
        address=with_port(address or loaded.address or DEFAULT_ADDRESS),
        namespace=namespace or loaded.namespace or "default",
        api_key=api_key,
        tls=chosen_tls,
        rpc_metadata=dict(loaded.grpc_meta),
    )


def _readable(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConnectionRefused(f"cannot read {path}: {error.strerror or error}") from error


def why(error: BaseException) -> str:
    """The gist of a connection error: the SDK's are a nest of its transport's own."""
    text = str(error)
    said: list[str] = re.findall(r'message: "([^"]+)"', text)
    said = said or re.findall(r'ConnectError\("([^"]+)"', text)
    if said:
        return said[-1]
    first = text.splitlines()[0] if text else type(error).__name__
    return first.removeprefix("Failed client connect: ")[:200]


async def connect(
    chosen: Connection,
    *,
    within: float,
    say: Callable[[str], None],
    plugins: Sequence[Plugin] = (),
    interceptors: Sequence[Interceptor] = (),
    clock: Callable[[], float] = time.monotonic,
) -> Client:
    """A client of ``chosen``'s server, tried again with a growing wait (from 1 s, doubling,
    at most 30 s), each failed try said, for up to ``within`` seconds; then a
    ``ConnectionRefused`` naming the address. Credentials refused end it at once."""
    deadline = clock() + within
    wait = FIRST_WAIT
    while True:
        try:
            return await Client.connect(
                chosen.address,
                plugins=list(plugins),
                interceptors=list(interceptors),
                **chosen.options(),
            )
        except RPCError as error:
            if error.status in _FOR_GOOD:
                raise ConnectionRefused(
                    f"the Temporal server at {chosen.address} refused the connection: {error}"
                ) from error
            reason = why(error)
        except Exception as error:  # the SDK's RuntimeError for a server not there
            reason = why(error)
        left = deadline - clock()
        if left <= 0:
            raise ConnectionRefused(
                f"the Temporal server at {chosen.address} could not be reached within "
                f"{within:g}s: {reason}"
            )
        pause = min(wait, left)
        say(
            f"the Temporal server at {chosen.address} cannot be reached yet ({reason}); "
            f"trying again in {pause:.0f}s"
        )
        await asyncio.sleep(pause)
        wait = min(wait * 2, LONGEST_WAIT)
