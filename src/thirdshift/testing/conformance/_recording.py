"""Recordings: each conformance scenario's streams from a real CLI, filtered and kept as data.

``thirdshift check --record DIR`` (``make recordings`` into :data:`STREAMS`) plays every scenario
on the real CLI under the fake model and keeps each session's stdout, with what varies from
play to play (ids, paths, times, costs, pids, the fake model's tool-call ids) replaced by
placeholders, in the manner of vcrpy's filters:
``<DIR>/<cli>/<scenario>/<n>-<kind>.jsonl`` and ``<DIR>/<cli>/VERSION``.

The committed recordings are read by the in-process tests (each Harness's reader on each
recorded session gives the outcome its scenario expects) and by ``thirdshift check``, which
says where a CLI's stream now shows event shapes the recording does not, or no longer shows
some (a hint that the CLI changed; the scenario's outcome is what passes or fails).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thirdshift.testing._placeholders import (
    FOLDER,
    FOLDER_AS_NAME,
    MILLISECONDS,
    PID,
    SHELL,
    TIME,
    UID,
    USD,
    UUID,
    hidden,
)
from thirdshift.testing.conformance._normalise import port_hidden
from thirdshift.testing.conformance._scenario import Observed, Scenario
from thirdshift.testing.fakecli._claude import folder_name
from thirdshift.testing.fakecli._templates import RECORDINGS

STREAMS = Path(RECORDINGS)
"""Where the committed recordings live (``make recordings`` writes them)."""

# Fields whose value is the play's, never the CLI's: each becomes one placeholder.
_FIXED_PLACEHOLDERS = {
    "uuid": UUID,
    "timestamp": TIME,
    "start_time": TIME,
    "end_time": TIME,
    "duration_ms": MILLISECONDS,
    "duration_api_ms": MILLISECONDS,
    "ttft_ms": MILLISECONDS,
    "ttft_stream_ms": MILLISECONDS,
    "time_to_request_ms": MILLISECONDS,
    "retry_delay_ms": MILLISECONDS,
    "total_cost_usd": USD,
    "costUSD": USD,
    "cost": USD,
    "pid": PID,
}
# Fields naming a thing the stream refers to again (a task, a tool call): each value becomes a
# numbered placeholder, the same wherever it reappears, so the links between lines survive.
_NUMBERED = {
    "session_id": "session",
    "sessionId": "session",
    "thread_id": "session",
    "task_id": "task",
    "tool_use_id": "call",
    "call_id": "call",
    "callId": "call",
    "id": "id",
    "item_id": "id",
    "messageID": "id",
    "sessionID": "session",
    "shell_id": "task",
    "tool_id": "call",
    "callID": "call",
    "request_id": "request",
}
# Epoch times under any key (opencode's ``start``/``end``): milliseconds, or float seconds.
_EPOCH_MS = range(10**12, 10**13)
_EPOCH_SECONDS = (1e9, 1e10)
_SHORTEST_NUMBERED = 4  # shorter values ("0", "1") are counters, too common to replace as text
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
_SHOWN = 160  # characters of a field a difference shows
_CLAUDE_TMP = re.compile(r"/claude-\d+/")  # Claude's per-uid temporary folder
_PID_IN_TEXT = re.compile(r"\b(pg?id:? )\d+", re.IGNORECASE)  # "(pid 30697)", "PGID: 24889"
_HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT")
_QWEN_SHELL = re.compile(r"\bbg_[0-9a-f]{8}\b")  # a background shell's id, in Qwen's words


@dataclass(frozen=True)
class RecordedSession:
    """One session of a recording: its kind (``task``, ``task-resume``) and its stdout lines."""

    kind: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Recording:
    """One scenario's sessions on one real CLI, filtered."""

    harness: str
    scenario: str
    sessions: tuple[RecordedSession, ...]


def taken(scenario: Scenario, observed: Observed, folder: Path) -> Recording:
    """The recording of a play of ``scenario`` in ``folder`` (before the folder goes)."""
    logs = folder / "logs"
    sessions = []
    for outcome in observed.sessions:
        found = sorted(logs.glob(f"*-{outcome.kind}.jsonl"))
        if len(found) != 1:
            continue  # a session whose CLI never started wrote no log
        text = found[0].read_bytes().decode("utf-8", "replace")
        sessions.append(RecordedSession(outcome.kind, tuple(text.splitlines())))
    return Recording(scenario.harness, scenario.name, filtered(sessions, folder))


def filtered(sessions: Iterable[RecordedSession], folder: Path) -> tuple[RecordedSession, ...]:
    """``sessions`` with every value that varies between plays replaced by a placeholder.

    Numbered placeholders are counted over the whole recording, so that a Resume's reference
    to the first session's task is the same placeholder in both.
    """
    sessions = tuple(sessions)
    numbered: dict[str, str] = {}
    parsed = [[_parsed(line) for line in session.lines] for session in sessions]
    for events in parsed:
        for event in events:
            if event is not None:
                _collect(event, numbered)
    roots = sorted({str(folder), str(folder.resolve())}, key=len, reverse=True)
    texts = [(root, FOLDER) for root in roots]
    # Claude names a project's folder after its path ("/tmp/x_1" is "-tmp-x-1").
    texts += [(folder_name(root), FOLDER_AS_NAME) for root in roots]
    texts += sorted(numbered.items(), key=lambda pair: -len(pair[0]))
    result = []
    for session, events in zip(sessions, parsed, strict=True):
        lines = []
        for line, event in zip(session.lines, events, strict=True):
            if event is None:
                lines.append(_text(line, texts))
            else:
                replaced = _replaced(event, texts)
                lines.append(json.dumps(replaced, ensure_ascii=False, separators=(",", ":")))
        result.append(RecordedSession(session.kind, tuple(lines)))
    return tuple(result)


def _parsed(line: str) -> Any:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _collect(value: Any, numbered: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            kind = _NUMBERED.get(key)
            long_enough = isinstance(item, str) and len(item) >= _SHORTEST_NUMBERED
            if kind and long_enough and item not in numbered:
                count = sum(name.startswith(f"<{kind}-") for name in numbered.values())
                numbered[item] = f"<{kind}-{count + 1}>"
            _collect(item, numbered)
    elif isinstance(value, list):
        for item in value:
            _collect(item, numbered)


def _replaced(value: Any, texts: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {
            key: hidden(_FIXED_PLACEHOLDERS[key], item)
            if key in _FIXED_PLACEHOLDERS
            else _replaced(item, texts)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_replaced(item, texts) for item in value]
    if isinstance(value, str):
        return _text(value, texts)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in _EPOCH_MS:
        return hidden(TIME, value)
    if isinstance(value, float) and _EPOCH_SECONDS[0] <= value < _EPOCH_SECONDS[1]:
        return hidden(TIME, value)
    return value


def _text(text: str, texts: list[tuple[str, str]]) -> str:
    for found, placeholder in texts:
        text = text.replace(found, placeholder)
    text = _CLAUDE_TMP.sub(f"/claude-{UID}/", text)
    text = _UUID.sub(UUID, text)
    text = _ISO_TIME.sub(TIME, text)
    text = _HTTP_DATE.sub(TIME, text)
    text = _PID_IN_TEXT.sub(r"\1<pid>", text)
    text = _QWEN_SHELL.sub(SHELL, text)
    return port_hidden(text)


def write(recording: Recording, root: Path) -> Path:
    """Write ``recording`` under ``root`` (its scenario's folder replaced); return the folder."""
    folder = root / recording.harness / recording.scenario
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    for number, session in enumerate(recording.sessions, 1):
        text = "".join(f"{line}\n" for line in session.lines)
        (folder / f"{number}-{session.kind}.jsonl").write_text(text, encoding="utf-8")
    return folder


def write_version(harness: str, version: str, root: Path) -> None:
    """Say which version of ``harness``'s CLI the recordings under ``root`` were made on."""
    (root / harness).mkdir(parents=True, exist_ok=True)
    (root / harness / "VERSION").write_text(f"{version}\n", encoding="utf-8")


def read(root: Path, harness: str, scenario: str) -> Recording | None:
    """The recording of ``scenario`` on ``harness`` under ``root``; None if there is none."""
    folder = root / harness / scenario
    if not folder.is_dir():
        return None
    sessions = []
    for path in sorted(folder.glob("*.jsonl"), key=_number):
        kind = path.stem.partition("-")[2]
        lines = tuple(path.read_text(encoding="utf-8").splitlines())
        sessions.append(RecordedSession(kind, lines))
    return Recording(harness, scenario, tuple(sessions))


def recorded(root: Path = STREAMS) -> Iterator[Recording]:
    """Every recording under ``root``, by Harness and scenario name."""
    if not root.is_dir():
        return
    for harness in sorted(path for path in root.iterdir() if path.is_dir()):
        for scenario in sorted(path for path in harness.iterdir() if path.is_dir()):
            found = read(root, harness.name, scenario.name)
            if found is not None:
                yield found


def recorded_version(harness: str, root: Path = STREAMS) -> str | None:
    """The CLI version ``harness``'s recordings were made on, if they say."""
    path = root / harness / "VERSION"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def _number(path: Path) -> int:
    head = path.stem.partition("-")[0]
    return int(head) if head.isdigit() else 0


def shape(line: str) -> str:
    """What kind of line ``line`` is, without its values: ``system/init``, ``item.completed``
    with its item's type, the sorted keys of an event without a type, or ``text``."""
    event = _parsed(line)
    if event is None:
        return "text"
    kind = event.get("type")
    if not isinstance(kind, str):
        return "{" + ",".join(sorted(str(key) for key in event)) + "}"
    for detail in ("subtype", "item"):
        sub = event.get(detail)
        if isinstance(sub, str):
            return f"{kind}/{sub}"
        if isinstance(sub, dict) and isinstance(sub.get("type"), str):
            return f"{kind}/{sub['type']}"
    return kind


def fields(line: str) -> frozenset[str]:
    """Every field of ``line``'s event as a path and the type of its value
    (``message.content[].input.command:str``, ``item.exit_code:NoneType``), and each plain value
    with its path (``usage.input_tokens=20``, ``item.status="completed"``); none for a text line.

    What varies from play to play is a placeholder by now, so the values left are the CLI's
    answer to the scenario under the fake model: the same on every play.
    """
    found: set[str] = set()
    _fields(_parsed(line), "", found)
    return frozenset(found)


def _fields(value: Any, path: str, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(f"{path}{key}:{type(item).__name__}")
            _value(item, f"{path}{key}", found)
            _fields(item, f"{path}{key}.", found)
    elif isinstance(value, list):
        for item in value:
            _value(item, f"{path.removesuffix('.')}[]", found)
            _fields(item, f"{path.removesuffix('.')}[].", found)


def _value(value: Any, path: str, found: set[str]) -> None:
    if value is None or isinstance(value, str | int | float | bool):
        found.add(f"{path}={json.dumps(value, ensure_ascii=False)}")


def stream_differences(
    committed: Recording, fresh: Recording, *, stopped: bool = False
) -> list[str]:
    """Where ``fresh`` shows line shapes ``committed`` does not, or lacks some, per session, and,
    for a shape both show, fields (and values, see :func:`fields`) one has and the other has
    not.

    Shapes and fields are compared as sets: the real CLIs vary the order and the repeats of
    their events from play to play (Claude may take a turn of its own to read a notification),
    not which events they print nor what those carry. ``stopped``: thirdshift stopped a CLI
    mid-stream (:attr:`Scenario.stops`), and where the stop lands is a race in the recording
    as in the fresh play (the real Codex reports the command a Ctrl-C cut short only if it gets
    that far), so which shapes either shows is no sign of change: only the fields of the shapes
    both show are compared.
    """
    found = []
    kinds = [session.kind for session in committed.sessions]
    fresh_kinds = [session.kind for session in fresh.sessions]
    if kinds != fresh_kinds:
        found.append(f"sessions: recorded {', '.join(kinds)}; now {', '.join(fresh_kinds)}")
    for old, new in zip(committed.sessions, fresh.sessions, strict=False):
        was, now = _fields_by_shape(old), _fields_by_shape(new)
        if not stopped:
            if now.keys() - was.keys():
                new_shapes = ", ".join(sorted(now.keys() - was.keys()))
                found.append(f"{new.kind}: new in the stream: {new_shapes}")
            if was.keys() - now.keys():
                gone = ", ".join(sorted(was.keys() - now.keys()))
                found.append(f"{new.kind}: no longer in the stream: {gone}")
        for both in sorted(was.keys() & now.keys()):  # a line shape both sessions show
            if now[both] - was[both]:
                gained = ", ".join(_cut(field) for field in sorted(now[both] - was[both]))
                found.append(f"{new.kind}: {both} has new fields: {gained}")
            if was[both] - now[both]:
                lost = ", ".join(_cut(field) for field in sorted(was[both] - now[both]))
                found.append(f"{new.kind}: {both} no longer has: {lost}")
    return found


def _cut(field: str) -> str:
    """``field`` as a difference names it: a long value cut (the recording has it whole)."""
    return field if len(field) <= _SHOWN else field[: _SHOWN - 1] + "…"


def _fields_by_shape(session: RecordedSession) -> dict[str, set[str]]:
    by_shape: dict[str, set[str]] = {}
    for line in session.lines:
        by_shape.setdefault(shape(line), set()).update(fields(line))
    return by_shape
