"""What a Codex session's sub-agents used, read from the rollouts Codex writes under CODEX_HOME.

``codex exec --json`` says only its own thread's tokens: a sub-agent (a thread it spawns, its
"delegated" thread) is left out of ``turn.completed``. Codex 0.171.0 writes each thread's
rollout as ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``; a spawned
thread's first line (``session_meta``) names the thread that spawned it as its
``parent_thread_id``, and each answer of the model to a thread is a ``token_usage_record``
line with that thread's ``thread_id`` and the answer's ``usage`` (``tests/codex_rollouts``).

A spawned thread's rollout starts with a copy of its parent's history, so a record counts
only in the rollout of its own thread, and only from the call's start (a Resume's sub-agent
may go on in an earlier call's rollout). Sub-agents of sub-agents count too. Reading is
bounded: only rollouts changed since the call started, in the date folders around it, each
read a line at a time and only its first ``MAX_ROLLOUT_BYTES``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from thirdshift._values import Billing, Usage
from thirdshift.harness._usage import count

MAX_ROLLOUT_BYTES = 64 * 1024 * 1024
MAX_ROLLOUTS = 1000
"""Rollouts changed since the call started that are looked at, at most."""
MAX_LINE = 1024 * 1024
"""A longer line is no record thirdshift reads (a record is a few hundred bytes)."""


def codex_home(env: Mapping[str, str]) -> Path | None:
    """Where the CLI keeps its state: ``CODEX_HOME``, else ``~/.codex``; None without either."""
    home = env.get("CODEX_HOME")
    if home:
        return Path(home)
    user_home = env.get("HOME")
    return Path(user_home) / ".codex" if user_home else None


def auth_billing(env: Mapping[str, str]) -> Billing | None:
    """How ``codex exec`` will bill, as its settings say: ``CODEX_API_KEY``, which exec takes
    over any login, is an API key; else ``auth.json``'s ``auth_mode`` (``apikey``, or a
    ChatGPT plan's ``chatgpt``). None where neither says (no login, or one unreadable)."""
    if env.get("CODEX_API_KEY"):
        return "api"
    home = codex_home(env)
    if home is None:
        return None
    try:
        with (home / "auth.json").open("rb") as file:
            auth = json.loads(file.read(MAX_LINE))
    except (OSError, ValueError, RecursionError):
        return None
    mode = auth.get("auth_mode") if isinstance(auth, dict) else None
    if mode == "apikey":
        return "api"
    if isinstance(mode, str) and mode.lower().startswith("chatgpt"):
        return "subscription"
    return None


def delegated_usage(home: Path, session_id: str, since: float) -> Usage | None:
    """The tokens the threads ``session_id`` spawned (and theirs) used since ``since`` (epoch
    seconds), ``subagents="counted"``; None where the session's own rollout is not found,
    so that nothing can be said of its sub-agents."""
    parents: dict[str, str] = {}  # thread id -> the thread that spawned it
    files: dict[str, Path] = {}
    for path in _recent_rollouts(home / "sessions", since):
        meta = _first_meta(path)
        if meta is None:
            continue
        thread, parent = meta
        files[thread] = path
        if parent is not None:
            parents[thread] = parent
    if session_id not in files and not _rollout_of(home / "sessions", session_id):
        return None  # Codex keeps no rollouts here: nothing can be said of its sub-agents
    ours = {session_id}
    grew = True
    while grew:  # the session's threads, however deep: each parent is found before or after
        found = {thread for thread, parent in parents.items() if parent in ours} - ours
        ours |= found
        grew = bool(found)
    fresh = cached = out = 0
    for thread in sorted(ours - {session_id}):
        for usage in _records(files[thread], thread, since):
            fresh += usage[0]
            cached += usage[1]
            out += usage[2]
    return Usage(
        input_tokens=fresh, output_tokens=out, cached_input_tokens=cached, subagents="counted"
    )


def _recent_rollouts(sessions: Path, since: float) -> Iterator[Path]:
    """The rollout files changed since ``since``, in the date folders from the day before the
    call started to the day after today (Codex names them by its local date)."""
    start = datetime.fromtimestamp(since, UTC).date() - timedelta(days=1)
    end = datetime.now(UTC).date() + timedelta(days=1)
    seen = 0
    day = start
    while day <= end and seen < MAX_ROLLOUTS:
        folder = sessions / f"{day.year:04d}" / f"{day.month:02d}" / f"{day.day:02d}"
        day += timedelta(days=1)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not (entry.name.startswith("rollout-") and entry.name.endswith(".jsonl")):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_mtime < since:
                    continue
            except OSError:
                continue
            seen += 1
            yield Path(entry.path)
            if seen >= MAX_ROLLOUTS:
                return


def _rollout_of(sessions: Path, thread: str) -> bool:
    """Whether a rollout of ``thread`` is anywhere under ``sessions`` (a Resume's may be in an
    older date folder than the call's)."""
    try:
        return any(sessions.glob(f"*/*/*/rollout-*-{thread}.jsonl"))
    except (OSError, ValueError):
        return False


def _lines(path: Path) -> Iterator[str]:
    """The file's lines, bounded; a line too long is skipped, not read into memory whole."""
    try:
        with path.open("rb") as file:
            read = 0
            while read < MAX_ROLLOUT_BYTES:
                line = file.readline(MAX_LINE + 1)
                if not line:
                    return
                read += len(line)
                if len(line) > MAX_LINE:
                    while line and not line.endswith(b"\n"):  # the rest of the long line
                        line = file.readline(MAX_LINE + 1)
                        read += len(line)
                    continue
                yield line.decode("utf-8", "replace")
    except OSError:
        return


def _event(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def _first_meta(path: Path) -> tuple[str, str | None] | None:
    """The thread the rollout is of, and the thread that spawned it (None: none did)."""
    for line in _lines(path):
        event = _event(line)
        payload = event.get("payload") if event is not None else None
        if event is None or event.get("type") != "session_meta" or not isinstance(payload, dict):
            return None
        thread, parent = payload.get("id"), payload.get("parent_thread_id")
        if not isinstance(thread, str) or not thread:
            return None
        return thread, parent if isinstance(parent, str) and parent else None
    return None


def _records(path: Path, thread: str, since: float) -> Iterator[tuple[int, int, int]]:
    """Each answer's input, cached input and output tokens for ``thread``, from ``since``."""
    for line in _lines(path):
        if '"token_usage_record"' not in line:
            continue
        event = _event(line)
        payload = event.get("payload") if event is not None else None
        if event is None or event.get("type") != "token_usage_record":
            continue
        if not isinstance(payload, dict) or payload.get("thread_id") != thread:
            continue  # a copy of its parent's history
        if not _at_or_after(event.get("timestamp"), since):
            continue
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            continue
        fresh, cached, out = (
            usage.get("input_tokens"),
            usage.get("cached_input_tokens"),
            usage.get("output_tokens"),
        )
        if count(fresh) and count(out):
            yield fresh, cached if count(cached) else 0, out


def _at_or_after(stamp: object, since: float) -> bool:
    if not isinstance(stamp, str):
        return False
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() >= since
