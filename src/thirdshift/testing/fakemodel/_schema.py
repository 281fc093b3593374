"""A value that fits a JSON schema: the answer to a side request that asks for structured output.

Gemini CLI's model router asks for a JSON object (its reasoning and a model choice) before each
turn, and its other helpers (the next-speaker check, loop detection) ask the same way; an answer
that does not fit is logged and retried. The first choice of an enum is taken (the router's
``flash``, the next-speaker check's ``user``, which ends the turn); numbers take their minimum,
or 1 (the router's score must be 1 to 100, which its schema does not say).
Schemas are request data: anything unexpected gives ``None``, never an error.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 8  # a schema nested deeper (or a cycle) is answered with null there


def filled(schema: Any, depth: int = 0) -> Any:
    """A value that fits ``schema`` (OpenAPI's upper-case type names accepted too)."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for combined in ("anyOf", "oneOf", "allOf"):
        choices = schema.get(combined)
        if isinstance(choices, list) and choices:
            return filled(choices[0], depth + 1)
    json_type = _type(schema)
    if json_type == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return {}
        return {
            name: filled(part, depth + 1)
            for name, part in properties.items()
            if isinstance(name, str)
        }
    if json_type == "array":
        count = schema.get("minItems")
        count = count if isinstance(count, int) and 0 < count <= 16 else 0
        return [filled(schema.get("items"), depth + 1) for _ in range(count)]
    if json_type in ("integer", "number"):
        least = schema.get("minimum")
        return least if isinstance(least, int | float) and not isinstance(least, bool) else 1
    if json_type == "boolean":
        return False
    if json_type == "string":
        return "ok"
    return None


def _type(schema: dict[str, Any]) -> str | None:
    json_type = schema.get("type")
    if isinstance(json_type, list):
        json_type = next(
            (part for part in json_type if isinstance(part, str) and part != "null"), None
        )
    if isinstance(json_type, str):
        return json_type.lower()
    return "object" if isinstance(schema.get("properties"), dict) else None
