"""What the readers' hypothesis properties share: any JSON value, and a value swapped into an
event at any path inside it."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def value_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (the empty path too)."""
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += value_paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += value_paths(inner, (*path, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with what is at ``path`` swapped for ``new`` (copies, never in place)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = replaced(value[head], rest, new)
    return copy
