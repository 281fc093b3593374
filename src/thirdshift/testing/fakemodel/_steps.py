"""Which of the shared steps (:mod:`thirdshift.testing.steps`) the fake model plays.

``run``, ``background``, ``edit`` and ``load_skill`` are tool calls the real CLI then carries
out with its real tools; ``say`` is assistant text; the faults are the model server's own
answers instead of a reply. The fields that shape what a fake CLI does itself are ignored:
``background``'s ``grace`` (the real CLI has its own, Claude's ~5 s), ``hang``'s ``ignore`` and
``timeout``. Steps only a fake program can act out (``exit``, ``raw``…) are refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

from thirdshift.testing._steps import MODEL, Background, Edit, LoadSkill, Run, Step

ToolStep: TypeAlias = Run | Background | Edit | LoadSkill
"""A step the model answers with a tool call, which the real CLI then carries out."""
TOOL_STEPS = (Run, Background, Edit, LoadSkill)

_PLAYED = "run, background, edit, load_skill, say and its own faults"
_FAULTS = "http_error, at_capacity, too_many_requests, quota_spent, hang, stall"


def check_steps(cli_name: str, steps: Iterable[object]) -> tuple[Step, ...]:
    """``steps`` as one script of ``cli_name``; raises TypeError on a step the model cannot play."""
    checked: list[Step] = []
    for step in steps:
        if not isinstance(step, Step):
            raise TypeError(f"{cli_name}.script: not a fake model step: {step!r}")
        if MODEL not in step.played_by:
            raise TypeError(
                f"{cli_name}.script: {step.verb}() is a step of the fake CLIs only; the fake "
                f"model plays {_PLAYED} (thirdshift.testing.fakemodel: {_FAULTS})"
            )
        checked.append(step)
    return tuple(checked)
