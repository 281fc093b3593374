"""The ``instant_waits`` fixture: a limit wait under the fake CLIs takes no time, recorded."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_thirdshift import FakeCLIs, RecordedWaits
from thirdshift import Logs, RateLimited, Sessions, claude
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps

CAPTURE = Path(__file__).parent.parent / "tests" / "transcripts" / "claude-429-retries2"
SESSION = "d04d2dbf-68e5-4664-b5d4-db5df8a24057"


def test_a_429_is_waited_out_at_once_recorded_and_continued(
    fake_cli_on_path: FakeCLIs, instant_waits: RecordedWaits, tmp_path: Path
) -> None:
    cli = fake_cli_on_path.claude
    cli.script(
        fake.session_id(SESSION),  # so that the fake knows it when resumed
        cli_steps.no_events(),
        cli_steps.raw((CAPTURE / "stdout.jsonl").read_bytes()),
        steps.exit(json.loads((CAPTURE / "meta.json").read_text())["rc"], abrupt=True),
    )
    cli.script(steps.say("carried on"))
    lines: list[str] = []

    logs = Logs(tmp_path / "logs", "repo")
    with Sessions.within(
        logs, tmp_path, claude(), progress=lines.append, wait_for_limits=600
    ) as sessions:
        final = sessions.run_to_final_message("implement", "Make the tests pass.")

    assert instant_waits.seconds == [60.0]  # a 429 without a reset time: the first wait
    assert final == "carried on"
    first, continued = cli.calls
    assert continued.argv == [*first.argv, "--resume", SESSION]
    assert isinstance(sessions.records[0].failure, RateLimited)
    assert [record.kind for record in sessions.records] == ["implement", "implement-continued"]
    waited = [line for line in lines if line.startswith("implement: claude exited 1: API Error")]
    assert len(waited) == 1
    assert "; waiting 1m until " in waited[0]  # reported as in production
