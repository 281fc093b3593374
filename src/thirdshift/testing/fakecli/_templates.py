"""The fakes' events, made from real ones: one captured line per event type, filled in.

``templates/claude.jsonl`` and ``templates/codex.jsonl`` hold, per event type, a line the real
CLI printed (Claude Code 2.1.197, Codex 0.171.0; each names its capture in
``../shared/transcripts``), so the fakes carry every field the real events carry, in the real
order, without a hand-kept list. A fake fills in what varies (ids, texts, paths, counts) with
:func:`event`; a field the real CLI leaves out in some case is taken out with :data:`DROP`.
"""

from __future__ import annotations

import json
import os
from typing import Any

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()
"""A fill that removes the field."""


class Whole(dict[str, Any]):
    """A dict fill that replaces the field whole, instead of filling it field by field."""


def load(cli: str) -> dict[str, str]:
    """The templates of ``cli`` (``claude`` or ``codex``), by name, as JSON texts."""
    with open(os.path.join(_FOLDER, f"{cli}.jsonl"), encoding="utf-8") as lines:
        entries = [json.loads(line) for line in lines]
    return {entry["name"]: json.dumps(entry["event"], ensure_ascii=False) for entry in entries}


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
