"""One account, one limit: what the sessions of one Harness and credential in this process know
of the limit that account has hit.

When one session reports a limit with its reset time (a plan's usage limit, say), every other
session on that account would hit it too, and spend a CLI start (and a quota check) learning
so. So the rules (:mod:`thirdshift._sessions`) tell the :class:`Account` of their ``within``
block, and each of them parks before it starts a session while the account's limit lasts.

An account is named by :func:`account_key`: the Harness's name and a digest of what the CLI
is given to authenticate (its environment's credential variables, and ``HOME``, where a login
keeps its tokens), never the credentials themselves. Values and a registry only: nothing here
waits or spawns.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from thirdshift.errors import SessionFailed


@dataclass(frozen=True)
class Limit:
    """A limit an account has hit: until when, and the failure that said so."""

    until: datetime
    failure: SessionFailed


class Account:
    """What the sessions of one account in this process know of its limit. Thread-safe."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._lock = threading.Lock()
        self._limit: Limit | None = None

    def reported(self, failure: SessionFailed) -> None:
        """A session failed on a limit; one with a reset time (``retry_at``) is the account's
        until then (the later, where two sessions report two)."""
        until = failure.retry_at
        if until is None:
            return
        with self._lock:
            if self._limit is None or until > self._limit.until:
                self._limit = Limit(until, failure)

    def limit_after(self, moment: datetime) -> Limit | None:
        """The limit that still holds after ``moment``, if one does."""
        with self._lock:
            limit = self._limit
        return limit if limit is not None and limit.until > moment else None


class Accounts:
    """The accounts of one process, by key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._accounts: dict[str, Account] = {}

    def of(self, key: str) -> Account:
        with self._lock:
            account = self._accounts.get(key)
            if account is None:
                account = self._accounts[key] = Account(key)
            return account


_lock = threading.Lock()
_current = [Accounts()]


def accounts() -> Accounts:
    """The accounts the sessions of this process share (those of :func:`isolated`, inside it)."""
    with _lock:
        return _current[-1]


@contextlib.contextmanager
def isolated() -> Iterator[Accounts]:
    """While active, the process's sessions share accounts only among themselves: a test's
    limits never park another test's sessions (the pytest plugin runs every test inside)."""
    fresh = Accounts()
    with _lock:
        _current.append(fresh)
    try:
        yield fresh
    finally:
        with _lock:
            _current.remove(fresh)


def account_key(harness: str, env: Mapping[str, str], credentials: Sequence[str]) -> str:
    """``<harness>:<digest>``: the Harness, and a digest of the credential variables of
    ``env`` (those named, and ``HOME``), so that one account is one key and no key holds a
    secret."""
    digest = hashlib.sha256()
    for name in sorted({*credentials, "HOME"}):
        digest.update(f"{name}={env.get(name, '')}\0".encode("utf-8", "surrogateescape"))
    return f"{harness}:{digest.hexdigest()[:16]}"
