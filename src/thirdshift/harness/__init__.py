"""Harnesses: what thirdshift knows about each agent CLI."""

from thirdshift.harness.base import Choice, Harness, Invocation, StreamReader

__all__ = ["Choice", "Harness", "Invocation", "StreamReader"]
