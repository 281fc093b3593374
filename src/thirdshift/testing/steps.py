"""The steps of a scripted session, one vocabulary for every double that plays one.

A step says what happens in one session: the agent runs a command (:func:`run`), leaves one
running (:func:`background`), writes a file (:func:`edit`), loads a skill (:func:`load_skill`),
says something (:func:`say`); or the model's API fails (:func:`http_error`,
:func:`at_capacity`, :func:`too_many_requests`, :func:`quota_spent`), starts an answer and
goes quiet (:func:`stall`) or never answers (:func:`hang`); or the CLI exits (:func:`exit`).

The same step objects script a fake CLI (:mod:`thirdshift.testing.fakecli`, which acts the
step out and writes the stream its CLI would), the fake model (:mod:`thirdshift.testing.
fakemodel`, which answers the real CLI so that the real CLI does it) and a conformance scenario
(:mod:`thirdshift.testing.conformance`, played both ways). :attr:`Step.played_by` says which
doubles can play a step; each refuses the others as the script is queued. The fake CLIs
have steps of their own besides (:mod:`thirdshift.testing.fakecli`).

The fault steps are named after what the API answers, not after the error thirdshift then
raises (``at_capacity()`` ends in :class:`~thirdshift.errors.Overloaded`).
"""

# The steps named as verbs are their classes, imported under those names (not as _steps's
# `run = Run`) so that the API reference, which reads the source, finds them.
from thirdshift.testing._steps import Background as background
from thirdshift.testing._steps import Edit as edit
from thirdshift.testing._steps import Exit as exit
from thirdshift.testing._steps import LoadSkill as load_skill
from thirdshift.testing._steps import Run as run
from thirdshift.testing._steps import Say as say
from thirdshift.testing._steps import (
    Step,
    at_capacity,
    hang,
    http_error,
    quota_spent,
    stall,
    too_many_requests,
)

__all__ = [
    "Step",
    "at_capacity",
    "background",
    "edit",
    "exit",
    "hang",
    "http_error",
    "load_skill",
    "quota_spent",
    "run",
    "say",
    "stall",
    "too_many_requests",
]
