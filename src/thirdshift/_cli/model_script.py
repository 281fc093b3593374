"""The script file of ``thirdshift fake-model --script``: the model's side of a session, in JSON.

The file holds a JSON list of steps, played in order. Each step is an object with one key, the
name of a fake model step (:mod:`thirdshift.testing.fakemodel`), whose value gives its
arguments: a string or a number is its one argument, a list its arguments in order, an object
its arguments by name, and ``null`` none::

    [
      {"run": "ls"},
      {"background": {"command": "sleep 300", "description": "Run the tests"}},
      {"edit": ["notes.txt", "hello\\n"]},
      {"http_error": {"status": 529, "message": "try later"}},
      {"at_capacity": null},
      {"say": "Listed the files."}
    ]

An empty list is a session that only ends its turn with the fake model's default reply.
Anything else (not JSON, not a list, a step of another name, arguments its function refuses) is
a :class:`ScriptFileError` whose message says where, in one line.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from thirdshift.testing import steps
from thirdshift.testing.steps import Step

STEPS: dict[str, Callable[..., Step]] = {
    "run": steps.run,
    "background": steps.background,
    "edit": steps.edit,
    "load_skill": steps.load_skill,
    "say": steps.say,
    "http_error": steps.http_error,
    "at_capacity": steps.at_capacity,
    "too_many_requests": steps.too_many_requests,
    "quota_spent": steps.quota_spent,
    "hang": steps.hang,
    "stall": steps.stall,
}
"""The steps a script file may name: the fake model's, under the names its functions have."""

# Fault steps were named after the error thirdshift raises before issue 18; they are named after
# the API's answer now, and a script file that still uses an old name is told the new one.
RENAMED = {
    "overloaded": "at_capacity",
    "rate_limited": "too_many_requests",
    "usage_limit": "quota_spent",
}


class ScriptFileError(ValueError):
    """A script file that cannot be read or played; the message is one line."""


def read_script(path: Path) -> tuple[Step, ...]:
    """The steps of the script file at ``path``; :class:`ScriptFileError` when it has none."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or error
        raise ScriptFileError(f"cannot read {path}: {reason}") from None
    try:
        data = json.loads(text, parse_constant=_not_a_number)
    except json.JSONDecodeError as error:
        raise ScriptFileError(f"{path} is not JSON: {error}") from None
    except RecursionError:
        raise ScriptFileError(f"{path} is not JSON: nested too deeply") from None
    except ScriptFileError as error:
        raise ScriptFileError(f"{path}: {error}") from None
    return parse_script(data, str(path))


def parse_script(data: Any, source: str = "the script") -> tuple[Step, ...]:
    """``data`` (parsed JSON) as steps; :class:`ScriptFileError` naming ``source`` if it is not."""
    if not isinstance(data, list):
        raise ScriptFileError(f"{source} must be a JSON list of steps, not {_json_type(data)}")
    return tuple(_step(item, number, source) for number, item in enumerate(data, start=1))


def _step(item: Any, number: int, source: str) -> Step:
    where = f"{source}: step {number}"
    if not isinstance(item, dict) or len(item) != 1:
        raise ScriptFileError(
            f'{where} must be an object with one key, the step\'s name (as {{"say": "hi"}})'
        )
    ((name, arguments),) = item.items()
    make = STEPS.get(name)
    if make is None and name in RENAMED:
        raise ScriptFileError(f"{where}: the step {json.dumps(name)} is now {RENAMED[name]!r}")
    if make is None:
        raise ScriptFileError(
            f"{where}: no step is named {json.dumps(name)}; the steps are {', '.join(STEPS)}"
        )
    try:
        if arguments is None:
            step = make()
        elif isinstance(arguments, list):
            step = make(*arguments)
        elif isinstance(arguments, dict):
            step = make(**arguments)
        else:
            step = make(arguments)
    except (TypeError, ValueError, AttributeError, OverflowError) as error:
        raise ScriptFileError(f"{where} ({name}): {error}") from None
    _check_fields(step, f"{where} ({name})")
    return step


def _check_fields(step: Step, where: str) -> None:
    # The step functions take what they are given; a text that is a number would only fail
    # later, in the server's thread, as the CLI's request is answered. So each value is held
    # to its field's annotation here.
    hints = typing.get_type_hints(type(step))
    for field in dataclasses.fields(step):
        value = getattr(step, field.name)
        if not _fits(value, hints[field.name]):
            raise ScriptFileError(
                f"{where}: {field.name} must be {_expected(hints[field.name])}, "
                f"not {json.dumps(value, default=str)}"
            )


def _fits(value: Any, hint: Any) -> bool:
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, one) for one in arguments)
    if hint is type(None):
        return value is None
    if hint is str:
        return isinstance(value, str)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # finite: 1e400 reads as infinity, and no wait or time is that
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return number and math.isfinite(value)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return all(_fits(one, arguments[0]) for one in value)
        return len(value) == len(arguments) and all(map(_fits, value, arguments))
    return True  # no step has a field of another type; a new one is left to its function


def _expected(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_expected(one) for one in typing.get_args(hint))
    names = {str: "a string", int: "a whole number", float: "a finite number", type(None): "null"}
    return names.get(hint, "an object whose values are strings")


def _not_a_number(constant: str) -> Any:
    # Python's json takes NaN and Infinity, which no step can use (no time is infinite).
    raise ScriptFileError(f"{constant} is not a number a step can use")


def _json_type(data: Any) -> str:
    if isinstance(data, dict):
        return "an object"
    if isinstance(data, str):
        return "a string"
    if isinstance(data, bool) or data is None:
        return json.dumps(data)
    return "a number"
