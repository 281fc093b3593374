"""The process-wide interrupt: what ``request`` tells the blocks that are ``stopping``."""

from __future__ import annotations

from thirdshift import interrupts


def test_a_first_interrupt_stops_and_each_later_one_kills_where_a_block_can() -> None:
    said: list[str] = []
    with (
        interrupts.isolated(),
        interrupts.stopping(lambda: said.append("stop"), kill=lambda: said.append("kill")),
        interrupts.stopping(lambda: said.append("stop only")),
    ):
        interrupts.request()
        assert said == ["stop", "stop only"]
        interrupts.request()
        interrupts.request()
    assert said == ["stop", "stop only", "kill", "stop only", "kill", "stop only"]


def test_a_block_that_begins_after_an_interrupt_is_stopped_at_once_not_killed() -> None:
    said: list[str] = []
    with interrupts.isolated():
        interrupts.request()
        with interrupts.stopping(lambda: said.append("stop"), kill=lambda: said.append("kill")):
            assert said == ["stop"]
            interrupts.request()
    assert said == ["stop", "kill"]
