"""What a sandboxed session may reach, and the environment that points its CLI there.

The sandbox has a network of its own with nothing in it but loopback. What the session may
reach, the adapter serves from outside through listening sockets that the sandbox's pid 1
makes inside and hands over (see :mod:`.proxy`):

- a **relay** for each model API the CLI calls with a key, and for each endpoint on the
  machine's own loopback it may reach: it listens inside at the address the CLI is configured
  with (an API on ``127.0.0.1:PORT``, as the fake model is, answers at the same address inside,
  so its base URL works unchanged) or, for an API elsewhere, on a loopback port inside to which
  its base-URL variable is pointed. A relay to an API puts the API key back on each request:
  the CLI's environment holds only a placeholder, so a prompt-injected agent that reads every
  file and variable it can finds no key;
- a **forward proxy** (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``) that reaches, by name,
  the Harness's API hosts and further endpoints and what ``Sandbox(network=...)`` adds, and
  nothing else: no other port of the machine, no link-local or metadata address, no LAN.

This module only decides (a pure function of the Harness's needs, the Sandbox, the CLI's
environment and what the testing toolkit adds); :mod:`.proxy` serves.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from thirdshift._sandbox import (
    MODEL_HOOK,
    WRITE_HOOK,
    Endpoint,
    Sandbox,
    SandboxNeeds,
    endpoint,
)

HOOKS = (MODEL_HOOK, WRITE_HOOK)
PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
)
NO_PROXY = "127.0.0.1,localhost,::1"
FIRST_INSIDE_PORT = 3128
"""Where the forward proxy listens inside (the squid port, as tools expect); relays to APIs
elsewhere take the ports after it, skipping any a loopback endpoint uses."""


@dataclass(frozen=True)
class Relay:
    """A listener inside the sandbox at ``inside`` whose connections go to ``upstream``
    (``scheme://host:port``), each request's head with ``keys`` (placeholder, key) put back."""

    inside: Endpoint
    upstream: str
    keys: tuple[tuple[str, str], ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Egress:
    """Everything the session may reach: the ``relays``, the forward ``proxy`` inside and what
    it reaches by name (``allowed``); ``quiet``, the hosts refused without a progress line
    (the Harness's ``unneeded``); and ``env``, the CLI's environment inside."""

    relays: tuple[Relay, ...]
    proxy: Endpoint
    allowed: frozenset[Endpoint]
    env: Mapping[str, str] = field(repr=False)
    quiet: frozenset[str] = frozenset()

    @property
    def listening(self) -> tuple[Endpoint, ...]:
        """Every address the sandbox's pid 1 listens on, the relays' then the proxy's."""
        return (*(relay.inside for relay in self.relays), self.proxy)


def _upstream(url: str) -> tuple[str, Endpoint, str] | None:
    """A base URL's scheme, endpoint and path; None if it is none we can relay to."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, Endpoint(parts.hostname.lower(), port), parts.path.rstrip("/")


def _placeholder(variable: str) -> str:
    """What the CLI is given instead of the key in ``variable``: unique to this session."""
    return f"thirdshift-sandbox-{variable.lower().replace('_', '-')}-{secrets.token_hex(16)}"


def egress(
    needs: SandboxNeeds,
    sandbox: Sandbox,
    env: Mapping[str, str],
    hooks: Mapping[str, str],
) -> Egress:
    """What a session of a Harness with ``needs`` may reach under ``sandbox``, its CLI's
    environment being ``env`` and the orchestrator's ``hooks`` (:data:`HOOKS`) what they are."""
    inside = {name: value for name, value in env.items() if name not in HOOKS}
    relays: dict[Endpoint, Relay] = {}
    allowed: set[Endpoint] = {endpoint(text) for text in needs.endpoints}
    every_key: list[tuple[str, str]] = []
    # APIs elsewhere called with a key: (base-URL variable, scheme, host, path, keys).
    pending: list[tuple[str, str, Endpoint, str, tuple[tuple[str, str], ...]]] = []
    for api in needs.apis:
        keys: list[tuple[str, str]] = []
        for variable in api.key_variables:
            if inside.get(variable):
                placeholder = _placeholder(variable)
                keys.append((placeholder, inside[variable]))
                inside[variable] = placeholder
        every_key += keys
        base = inside.get(api.base_url_variable, "") if api.base_url_variable else ""
        found = _upstream(base or api.url)
        if found is None:
            continue
        scheme, upstream, path = found
        if upstream.loopback:
            # Answers at the same address inside: the base URL stands as it is.
            relays[upstream] = Relay(upstream, f"{scheme}://{upstream}", tuple(keys))
            continue
        allowed.add(upstream)  # by name too: a sign-in's calls, and a CLI without a key
        if keys and api.base_url_variable:
            pending.append((api.base_url_variable, scheme, upstream, path, tuple(keys)))
    for text in _listed(hooks.get(MODEL_HOOK, "")):
        model = endpoint(text)
        if model.loopback:
            relays[model] = Relay(model, f"http://{model}", tuple(every_key))
    for added in sandbox.endpoints:
        if added.loopback:
            relays.setdefault(added, Relay(added, f"http://{added}"))
        else:
            allowed.add(added)
    taken = {relay.inside.port for relay in relays.values()}
    ports = (port for port in range(FIRST_INSIDE_PORT, 65536) if port not in taken)
    proxy = Endpoint("127.0.0.1", next(ports))
    for variable, scheme, upstream, path, api_keys in pending:
        local = Endpoint("127.0.0.1", next(ports))
        relays[local] = Relay(local, f"{scheme}://{upstream}", api_keys)
        inside[variable] = f"http://{local}{path}"
    proxy_url = f"http://{proxy}"
    inside.update({name: proxy_url for name in PROXY_VARIABLES})
    inside["NO_PROXY"] = inside["no_proxy"] = NO_PROXY
    return Egress(
        relays=tuple(relays.values()),
        proxy=proxy,
        allowed=frozenset(allowed),
        env=inside,
        quiet=frozenset(host.lower() for host in needs.unneeded),
    )


def _listed(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def written_by_hook(hooks: Mapping[str, str]) -> list[str]:
    """The folders the testing toolkit adds read-write (:data:`WRITE_HOOK`)."""
    return [part for part in hooks.get(WRITE_HOOK, "").split(os.pathsep) if os.path.isabs(part)]


def hooks_of(environ: Mapping[str, str]) -> dict[str, str]:
    """The hooks as the orchestrator's own environment sets them."""
    return {name: environ[name] for name in HOOKS if environ.get(name)}


__all__ = [
    "HOOKS",
    "MODEL_HOOK",
    "WRITE_HOOK",
    "Egress",
    "Relay",
    "egress",
    "hooks_of",
    "written_by_hook",
]
