"""Sessions.cancel() on real processes: one session stopped, the others in the process carry on.

Sixteen sessions run at once in sixteen threads on the fake CLIs. One hangs and is cancelled
from the test's thread once its CLI is hanging; the others run a command and end as scripted.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from sessionkit import InThread, still_running

from pytest_thirdshift import FakeCLIs
from thirdshift import Interrupted, Logs, Sessions, claude
from thirdshift.testing import steps

SESSIONS = 16


def test_cancel_stops_one_session_and_the_others_carry_on(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("hanging"), steps.hang())
    for number in range(1, SESSIONS):
        fake_cli_on_path.claude.script(steps.run("sleep 0.5"), steps.say(f"done {number}"))
    # The hanging script must go to the first call: start that session alone, first.
    worktrees = [tmp_path / f"wt{index:02d}" for index in range(SESSIONS)]
    for worktree in worktrees:
        worktree.mkdir()
    holders: list[Sessions] = []

    def session(index: int) -> str | None:
        logs = Logs(tmp_path / "logs", f"wt{index:02d}")
        with Sessions.within(logs, worktrees[index], claude()) as sessions:
            if index == 0:
                holders.append(sessions)
            return sessions.run_to_final_message("implement", f"prompt {index}")

    cancelled = InThread(lambda: session(0), name="cancelled")
    cancelled.start()
    hanging = fake_cli_on_path.claude.wait_for_call(0, hanging=True, timeout=60)
    assert hanging.cwd == worktrees[0]
    others = [InThread(partial(session, i), name=f"s{i}") for i in range(1, SESSIONS)]
    for thread in others:
        thread.start()

    holders[0].cancel()

    with pytest.raises(Interrupted) as raised:
        cancelled.outcome(timeout=60)
    # What the stream said is kept: the id, to continue the session by (a fleet's worker that
    # was shut down does so), in the error and in its record.
    assert raised.value.session_id == hanging.session_id is not None
    assert holders[0].records[0].session_id == hanging.session_id
    assert sorted(thread.outcome(timeout=120) for thread in others) == sorted(
        f"done {number}" for number in range(1, SESSIONS)
    )
    (call,) = [call for call in fake_cli_on_path.claude.calls if call.pid == hanging.pid]
    assert call.signals == ["SIGTERM"]  # Claude's stop signal
    assert still_running([call.pid]) == []
    with pytest.raises(Interrupted):
        holders[0].run("review", "after the cancel")
