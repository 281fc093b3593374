"""The fakes' events, made from real ones: one recorded line per event type, filled in.

``templates/<cli>.jsonl`` names, per event type, where the real CLI printed one: most name a
line of the committed recordings (``testing/streams/<cli>/``, written by ``make recordings``) as a
file and a ``match`` (the file's first event holding all of it), so a CLI re-recorded after an
upgrade gives its fake the new events with no line copied by hand. The few events no
conformance scenario shows (Claude's refused Resume) keep the captured line itself, as
``event``, and name their capture as ``source``.

A recorded line has placeholders where the play's values were (``<uuid>``, ``<ms>``…, see
:mod:`thirdshift.testing._placeholders`); loading puts a value of the real type back, and a
fake fills in what varies (ids, texts, paths, counts) with :func:`event`; a field the real CLI
leaves out in some case is taken out with :data:`DROP`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from thirdshift.testing._placeholders import played

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "streams")
"""The committed recordings (``make recordings`` writes them)."""


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()
"""A fill that removes the field."""


class Whole(dict[str, Any]):
    """A dict fill that replaces the field whole, instead of filling it field by field."""


def load(cli: str) -> dict[str, str]:
    """The templates of ``cli``, by name, as JSON texts."""
    with open(os.path.join(_FOLDER, f"{cli}.jsonl"), encoding="utf-8") as lines:
        entries = [json.loads(line) for line in lines]
    recordings: dict[str, list[dict[str, Any]]] = {}
    made = {}
    for entry in entries:
        if "event" in entry:
            made[entry["name"]] = json.dumps(entry["event"], ensure_ascii=False)
            continue
        if entry["recorded"] not in recordings:
            recordings[entry["recorded"]] = recorded_events(cli, entry["recorded"])
        line = first_match(entry["match"], recordings[entry["recorded"]])
        if line is None:
            raise LookupError(f"{cli} template {entry['name']}: no line of {entry['recorded']}")
        made[entry["name"]] = json.dumps(played(line), ensure_ascii=False)
    return made


def recorded_events(cli: str, name: str) -> list[dict[str, Any]]:
    """The events of the recorded session ``name`` (``<scenario>/<n>-<kind>.jsonl``) of ``cli``."""
    with open(os.path.join(RECORDINGS, cli, name), encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.startswith("{")]


def first_match(match: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first of ``events`` holding all of ``match`` (a list's first item holding its one)."""
    return next((event for event in events if _holds(event, match)), None)


def _holds(value: Any, match: Any) -> bool:
    if isinstance(match, dict):
        return isinstance(value, dict) and all(
            key in value and _holds(value[key], item) for key, item in match.items()
        )
    if isinstance(match, list):
        return isinstance(value, list) and bool(value) and _holds(value[0], match[0])
    return bool(value == match)


def event(template: str, fills: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of ``template`` with ``fills`` merged in: a dict fills a dict field by
    field (a :class:`Whole` replaces it), any other value replaces the field, :data:`DROP`
    removes it."""
    made: dict[str, Any] = json.loads(template)
    _merge(made, fills)
    return made


def _merge(into: dict[str, Any], fills: dict[str, Any]) -> None:
    for key, value in fills.items():
        if value is DROP:
            into.pop(key, None)
        elif (
            isinstance(value, dict)
            and not isinstance(value, Whole)
            and isinstance(into.get(key), dict)
        ):
            _merge(into[key], value)
        else:
            into[key] = value
