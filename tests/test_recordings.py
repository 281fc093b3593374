"""The committed recordings (``make recordings``): complete, filtered, and read as their scenarios
expect by each Harness's reader, in-process."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from thirdshift import Usage
from thirdshift.harness import StreamReader, harness_named
from thirdshift.testing._placeholders import played, unfilled
from thirdshift.testing.conformance import Scenario, scenarios
from thirdshift.testing.conformance._others import BUILT_IN
from thirdshift.testing.conformance._recording import (
    STREAMS,
    RecordedSession,
    Recording,
    fields,
    filtered,
    read,
    recorded,
    recorded_version,
    shape,
    stream_differences,
    write,
)

SCENARIOS = {(s.harness, s.name): s for harness in BUILT_IN for s in scenarios(harness)}
RECORDINGS = {(r.harness, r.scenario): r for r in recorded()}
# The worktree as the recordings name it: the play's folder is a placeholder.
WORKTREE = Path("<folder>/worktree")
# CLIs whose stream says nothing of the background work their exit ends (docs/cli-facts.md):
# opencode and Gemini leave it running for the supervisor to find and stop; Qwen kills it and
# says so in a status file of its own (QwenHarness.work_killed_at_exit).
SILENT_ON_WORK_LEFT = frozenset({"opencode", "gemini", "qwen"})


# Complete


def test_every_built_in_scenario_has_a_recording() -> None:
    assert sorted(set(SCENARIOS) - set(RECORDINGS)) == []


def test_every_recording_is_of_a_scenario_that_exists() -> None:
    assert sorted(set(RECORDINGS) - set(SCENARIOS)) == []


@pytest.mark.parametrize("harness", BUILT_IN)
def test_each_clis_recordings_say_the_version_they_were_made_on(harness: str) -> None:
    version = recorded_version(harness)
    assert version is not None
    assert version[0].isdigit()


@pytest.mark.parametrize("key", sorted(RECORDINGS), ids="-".join)
def test_a_recording_holds_nothing_of_the_play_that_made_it(key: tuple[str, str]) -> None:
    text = "\n".join(line for session in RECORDINGS[key].sessions for line in session.lines)
    for varying in ("/tmp/", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"):
        assert varying not in text


# Read by the readers as the scenario expects


@pytest.mark.parametrize("key", sorted(RECORDINGS), ids="-".join)
def test_the_reader_gives_each_recorded_session_the_outcome_its_scenario_expects(
    key: tuple[str, str],
) -> None:
    recording, scenario = RECORDINGS[key], SCENARIOS[key]
    expected = {outcome.kind: outcome for outcome in scenario.expected.sessions}
    for session in recording.sessions:
        reader = harness_named(recording.harness).reader(WORKTREE)
        for line in session.lines:
            reader.feed(line + "\n")
        want = expected[session.kind]
        # What the stream alone shows: a session the after-result watchdog stopped may not
        # get to say what it killed (the adapter counts what it still ran).
        killed = reader.killed or _still_running(reader, scenario)
        if recording.harness in SILENT_ON_WORK_LEFT:
            assert killed == (), session.kind
        else:
            assert killed == want.killed, session.kind
        if want.final_message is not None:
            assert reader.final_message == want.final_message, session.kind
        assert (reader.session_id is not None) is want.has_session_id, session.kind


def _usage(harness: str, session: RecordedSession, earlier: Usage | None = None) -> Usage:
    reader = harness_named(harness).reader(WORKTREE)
    if earlier is not None:
        reader.resumed_after(earlier)
    for line in session.lines:
        reader.feed(line + "\n")
    usage = reader.ended().usage
    assert usage is not None, session.kind
    return usage


# Scenarios whose first session and its Resume each ask the model twice (a command, an answer).
TWO_REQUESTS_EACH = ("background-killed", "resume-killed-again")


@pytest.mark.parametrize(
    "key",
    sorted(key for key in RECORDINGS if key[1] in TWO_REQUESTS_EACH),
    ids="-".join,
)
def test_a_resumes_usage_told_its_sessions_earlier_usage_is_its_own(
    key: tuple[str, str],
) -> None:
    # Codex and Qwen count a Resume's tokens from the session's start (the first call's are in
    # them again); the others count the call's. Each reader says the call's own either way.
    first, resume = RECORDINGS[key].sessions
    used = _usage(key[0], first)
    again = _usage(key[0], resume, earlier=used)
    assert (again.input_tokens, again.output_tokens) == (used.input_tokens, used.output_tokens)
    assert again.turns == used.turns


def test_a_claude_call_that_reads_a_notification_counts_that_turn_too() -> None:
    # Its result after the notification turn says that turn's tokens and turns alone.
    (session,) = RECORDINGS["claude", "background-finishes"].sessions
    used = _usage("claude", session)
    assert (used.turns, used.input_tokens, used.output_tokens) == (3, 30, 15)


def _still_running(reader: StreamReader, scenario: Scenario) -> tuple[str, ...]:
    limit = scenario.watchdogs.after_result
    if limit is None or limit >= 60:
        return ()
    return reader.still_running


# The filters


def test_the_plays_folder_and_its_mangled_name_become_placeholders() -> None:
    folder = Path("/tmp/check_a1.b/play")  # Claude makes "-" of every "/", "_" and "."
    line = json.dumps(
        {"cwd": f"{folder}/worktree", "file": "/tmp/claude-0/-tmp-check-a1-b-play-worktree/x"}
    )
    (session,) = filtered([RecordedSession("task", (line,))], folder)
    assert json.loads(session.lines[0]) == {
        "cwd": "<folder>/worktree",
        "file": "/tmp/claude-<uid>/<folder-as-name>-worktree/x",
    }


def test_ids_are_numbered_once_across_the_sessions_of_a_recording() -> None:
    first = RecordedSession(
        "task",
        (
            json.dumps({"type": "system", "session_id": "sess-aaaa", "task_id": "bg111"}),
            json.dumps({"type": "user", "text": "Command running with ID: bg111"}),
            json.dumps({"type": "system", "task_id": "bg222"}),
        ),
    )
    resume = RecordedSession("task-resume", (json.dumps({"session_id": "sess-aaaa"}),))
    got = filtered([first, resume], Path("/nowhere"))
    assert [json.loads(line) for line in got[0].lines] == [
        {"type": "system", "session_id": "<session-1>", "task_id": "<task-1>"},
        {"type": "user", "text": "Command running with ID: <task-1>"},
        {"type": "system", "task_id": "<task-2>"},
    ]
    assert json.loads(got[1].lines[0]) == {"session_id": "<session-1>"}


def test_short_values_of_numbered_fields_are_left_as_they_are() -> None:
    line = json.dumps({"id": "0", "text": "0 files"})
    (session,) = filtered([RecordedSession("task", (line,))], Path("/nowhere"))
    assert json.loads(session.lines[0]) == {"id": "0", "text": "0 files"}


def test_times_costs_uuids_and_ports_become_placeholders() -> None:
    line = json.dumps(
        {
            "duration_ms": 208,
            "retry_delay_ms": 569.5,
            "total_cost_usd": 0.0007,
            "cost": 0,
            "pid": None,
            "uuid": "35693bde-aea0-4476-aff8-0159856e83cc",
            "start": 1796186711814,
            "at": 1796186711.5,
            "turns": 2,
            "flag": True,
            "text": "at 2026-12-02T04:29:34.624691+00:00 from http://127.0.0.1:40123/v1 "
            "id 35693bde-aea0-4476-aff8-0159856e83cc",
        }
    )
    (session,) = filtered([RecordedSession("task", (line,))], Path("/nowhere"))
    assert json.loads(session.lines[0]) == {
        "duration_ms": "<ms:int>",
        "retry_delay_ms": "<ms:float>",
        "total_cost_usd": "<usd:float>",
        "cost": "<usd:int>",
        "pid": None,
        "uuid": "<uuid>",
        "start": "<time:int>",
        "at": "<time:float>",
        "turns": 2,
        "flag": True,
        "text": "at <time> from http://127.0.0.1:<port>/v1 id <uuid>",
    }


def test_a_fake_plays_each_placeholder_as_a_value_of_the_type_recorded() -> None:
    recorded = {
        "duration_ms": "<ms:int>",
        "retry_delay_ms": "<ms:float>",
        "cost": "<usd:int>",
        "timestamp": "<time>",
        "start": "<time:int>",
        "at": "<time:float>",
        "uuid": "<uuid>",
        "pid": None,
        "ids": ["<session-1>", "<call-12>"],
        "text": "task <task-2> in <folder>",
    }
    values = played(recorded)
    assert values["duration_ms"] == 0
    assert type(values["duration_ms"]) is int
    assert type(values["retry_delay_ms"]) is float
    assert type(values["cost"]) is int
    assert datetime.fromisoformat(values["timestamp"]).year >= 2026
    assert datetime.fromtimestamp(values["start"] / 1000).year >= 2026
    assert type(values["at"]) is float
    assert datetime.fromtimestamp(values["at"]).year >= 2026
    assert str(uuid.UUID(values["uuid"])) == values["uuid"]
    assert values["pid"] is None
    assert values["ids"] == ["played-session-1", "played-call-12"]
    assert values["text"] == "task played-task-2 in <folder>"  # the fake fills in its paths
    shown = json.dumps(values)
    assert unfilled(shown) == ["played-session-1", "played-call-12", "played-task-2", "<folder>"]
    assert unfilled(json.dumps(recorded))[:3] == ["<ms:int>", "<ms:float>", "<usd:int>"]
    assert unfilled('{"model": "<synthetic>", "text": "<b>, fake-session-1, /tmp/x"}') == []


def test_a_line_that_is_no_json_object_is_filtered_as_text(tmp_path: Path) -> None:
    lines = (f"warning: {tmp_path}/x at 127.0.0.1:9", "[1, 2]")
    (session,) = filtered([RecordedSession("task", lines)], tmp_path)
    assert session.lines == ("warning: <folder>/x at 127.0.0.1:<port>", "[1, 2]")


def test_a_recording_written_reads_back_the_same(tmp_path: Path) -> None:
    recording = Recording(
        "claude",
        "background-killed",
        (RecordedSession("task", ('{"a":1}', "text")), RecordedSession("task-resume", ("{}",))),
    )
    folder = write(recording, tmp_path)
    assert sorted(path.name for path in folder.iterdir()) == ["1-task.jsonl", "2-task-resume.jsonl"]
    assert read(tmp_path, "claude", "background-killed") == recording
    assert read(tmp_path, "claude", "hello") is None


def test_writing_a_recording_again_replaces_its_sessions(tmp_path: Path) -> None:
    two = (RecordedSession("task", ("{}",)), RecordedSession("task-resume", ("{}",)))
    write(Recording("codex", "s", two), tmp_path)
    write(Recording("codex", "s", two[:1]), tmp_path)
    assert [s.kind for s in read(tmp_path, "codex", "s").sessions] == ["task"]  # type: ignore[union-attr]


def test_the_committed_recordings_are_where_the_package_keeps_them() -> None:
    assert STREAMS.parent.name == "testing"
    assert (STREAMS / "claude").is_dir()


# Shapes


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"type":"system","subtype":"init"}', "system/init"),
        (
            '{"type":"item.completed","item":{"type":"agent_message"}}',
            "item.completed/agent_message",
        ),
        ('{"type":"result"}', "result"),
        ('{"b":1,"a":2}', "{a,b}"),
        ("not json", "text"),
    ],
)
def test_a_lines_shape_names_its_event_without_its_values(line: str, expected: str) -> None:
    assert shape(line) == expected


def test_shape_differences_name_new_and_missing_events_but_not_order_or_repeats() -> None:
    old = Recording("claude", "s", (RecordedSession("task", ('{"type":"a"}', '{"type":"b"}')),))
    same = Recording(
        "claude", "s", (RecordedSession("task", ('{"type":"b"}', '{"type":"a"}', '{"type":"a"}')),)
    )
    changed = Recording("claude", "s", (RecordedSession("task", ('{"type":"a"}', '{"type":"c"}')),))
    resumed = Recording("claude", "s", (*old.sessions, RecordedSession("task-resume", ())))
    assert stream_differences(old, same) == []
    assert stream_differences(old, changed) == [
        "task: new in the stream: c",
        "task: no longer in the stream: b",
    ]
    assert stream_differences(old, resumed) == ["sessions: recorded task; now task, task-resume"]


def test_a_stopped_cli_is_compared_only_by_the_fields_of_the_shapes_both_plays_show() -> None:
    # Where thirdshift's stop lands in a stream is a race, in the recording as in a fresh play:
    # the real Codex says the command a Ctrl-C cut short failed only when it gets that far.
    old = Recording("codex", "s", (RecordedSession("task", ('{"type":"a"}', '{"type":"b"}')),))
    cut = Recording("codex", "s", (RecordedSession("task", ('{"type":"a"}',)),))
    further = Recording(
        "codex", "s", (RecordedSession("task", ('{"type":"a"}', '{"type":"b"}', '{"type":"c"}')),)
    )
    changed = Recording("codex", "s", (RecordedSession("task", ('{"type":"a","x":1}',)),))
    assert stream_differences(old, cut, stopped=True) == []
    assert stream_differences(old, further, stopped=True) == []
    assert stream_differences(old, cut) == ["task: no longer in the stream: b"]
    assert stream_differences(old, changed, stopped=True) == ["task: a has new fields: x:int, x=1"]


def test_the_scenarios_that_stop_a_cli_mid_stream_say_so() -> None:
    for harness in BUILT_IN:
        stopping = {scenario.name for scenario in scenarios(harness) if scenario.stops}
        expected = {"interrupt"} | ({"background-cut-short"} if harness == "claude" else set())
        assert stopping == expected, harness


def test_a_lines_fields_are_its_paths_with_their_types_and_plain_values() -> None:
    line = (
        '{"type":"a","item":{"id":"x","exit_code":null},"content":[{"text":"t"},{"n":1}],"l":[2]}'
    )
    assert fields(line) == {
        "type:str",
        'type="a"',
        "item:dict",
        "item.id:str",
        'item.id="x"',
        "item.exit_code:NoneType",
        "item.exit_code=null",
        "content:list",
        "content[].text:str",
        'content[].text="t"',
        "content[].n:int",
        "content[].n=1",
        "l:list",
        "l[]=2",
    }
    assert fields("not json") == frozenset()


def test_stream_differences_name_fields_and_values_gained_and_lost_by_an_event_both_show() -> None:
    old = Recording("codex", "s", (RecordedSession("task", ('{"type":"a","x":1}',)),))
    new = Recording("codex", "s", (RecordedSession("task", ('{"type":"a","y":"1"}',)),))
    assert stream_differences(old, new) == [
        'task: a has new fields: y:str, y="1"',
        "task: a no longer has: x:int, x=1",
    ]
    # Compared as sets: a value the recording shows in one of its lines is enough.
    repeated = Recording(
        "codex", "s", (RecordedSession("task", ('{"type":"a"}', '{"type":"a","x":1}')),)
    )
    assert stream_differences(old, repeated) == []
    recounted = Recording("codex", "s", (RecordedSession("task", ('{"type":"a","x":2}',)),))
    assert stream_differences(old, recounted) == [
        "task: a has new fields: x=2",
        "task: a no longer has: x=1",
    ]


def test_a_long_value_is_cut_where_a_difference_names_it() -> None:
    old = Recording("codex", "s", (RecordedSession("task", ('{"type":"a"}',)),))
    long = json.dumps({"type": "a", "text": "x" * 500})
    new = Recording("codex", "s", (RecordedSession("task", (long,)),))
    (found,) = stream_differences(old, new)
    assert found.startswith('task: a has new fields: text:str, text="xxx')
    assert found.endswith("x…")
    assert len(found) < 250
