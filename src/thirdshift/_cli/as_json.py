"""What the ``thirdshift`` commands print with ``--json``: one line of printable ASCII.

Everything goes out through :func:`dumps` (or :func:`pieces`), whatever the stream held, so
that a script always gets one valid JSON object and a terminal never gets a control. The
values themselves (records, usage, failures) are made in :mod:`thirdshift._json_form`, which
the record files share.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from thirdshift._json_form import MAX_COUNT, failure_json, record_json, usage_json

__all__ = ["MAX_COUNT", "dumps", "failure_json", "pieces", "record_json", "usage_json"]


def dumps(value: Any) -> str:
    """``value`` as one line of JSON in printable ASCII.

    ``json``'s ASCII form writes every other character as a ``\\uXXXX`` escape (DEL too): so
    C1 controls (``\\u009b``), bidi controls and line separators from a stream never reach a
    terminal raw, and a lone surrogate (``\\ud800`` in the stream's JSON), which no encoding
    can write, is printed as its escape instead of raising.
    """
    return json.dumps(value, ensure_ascii=True)


def pieces(value: Any) -> Iterator[str]:
    """:func:`dumps` of ``value`` a piece at a time (a key, a value), to write as they come."""
    return json.JSONEncoder(ensure_ascii=True).iterencode(value)
