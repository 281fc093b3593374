"""What a Codex session's sub-agents used, read from the rollouts the real Codex wrote
(``tests/codex_rollouts/subagent``: its README says how they were made)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from harness_helpers import read_all

from thirdshift import Usage
from thirdshift._machine.subagents import SubagentUsage
from thirdshift.harness import CodexReader
from thirdshift.harness._builtin.codex import CodexHarness

CAPTURE = Path(__file__).parent / "codex_rollouts" / "subagent"
MAIN = "01a24eb5-cc89-7bb1-9278-1f57b29b0974"
HELPER = "01a24eb5-cd3b-7821-aadf-d3bb1c67844c"
STARTED = datetime.fromisoformat("2026-12-07T04:14:26+00:00").timestamp()  # the call's start
HELPERS_ONE_REQUEST = Usage(
    input_tokens=10, output_tokens=5, cached_input_tokens=0, subagents="counted"
)


def codex_home(tmp_path: Path) -> Path:
    """A CODEX_HOME holding the capture's rollouts, written now (as during the call)."""
    home = tmp_path / "codex-home"
    shutil.copytree(CAPTURE / "sessions", home / "sessions")
    return home


def rollout(home: Path, thread: str) -> Path:
    (found,) = (home / "sessions").glob(f"*/*/*/rollout-*-{thread}.jsonl")
    return found


def test_the_sub_agents_tokens_are_read_from_their_rollouts_by_parent_thread(
    tmp_path: Path,
) -> None:
    env = {"CODEX_HOME": str(codex_home(tmp_path))}
    assert CodexHarness().subagent_usage(env, MAIN, STARTED) == HELPERS_ONE_REQUEST


def test_the_reader_adds_them_to_what_its_stream_said(tmp_path: Path) -> None:
    reader = CodexReader(tmp_path)
    read_all(reader, (CAPTURE / "stdout.jsonl").read_text().splitlines(keepends=True))
    assert reader.usage is not None
    assert (reader.usage.input_tokens, reader.usage.subagents) == (20, "unknown")

    reader.add_subagents(HELPERS_ONE_REQUEST)

    assert reader.ended().usage == Usage(
        turns=1, input_tokens=30, output_tokens=15, cached_input_tokens=0, subagents="counted"
    )
    assert reader.usage_so_far == reader.ended().usage  # what the end's Budget check reads


def test_codex_home_defaults_to_the_homes_dot_codex(tmp_path: Path) -> None:
    shutil.copytree(CAPTURE / "sessions", tmp_path / ".codex" / "sessions")
    assert CodexHarness().subagent_usage({"HOME": str(tmp_path)}, MAIN, STARTED) == (
        HELPERS_ONE_REQUEST
    )


def test_a_session_with_no_sub_agent_has_them_counted_as_none(tmp_path: Path) -> None:
    home = codex_home(tmp_path)
    rollout(home, HELPER).unlink()
    assert CodexHarness().subagent_usage({"CODEX_HOME": str(home)}, MAIN, STARTED) == Usage(
        input_tokens=0, output_tokens=0, cached_input_tokens=0, subagents="counted"
    )


def test_without_the_sessions_own_rollout_nothing_is_said(tmp_path: Path) -> None:
    home = codex_home(tmp_path)
    harness = CodexHarness()
    assert harness.subagent_usage({"CODEX_HOME": str(home)}, "another-thread", STARTED) is None
    assert harness.subagent_usage({"CODEX_HOME": str(tmp_path / "nowhere")}, MAIN, STARTED) is None
    assert harness.subagent_usage({}, MAIN, STARTED) is None  # no CODEX_HOME, no HOME


def test_a_session_id_that_is_no_plain_id_never_becomes_a_path(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(codex_home(tmp_path))}
    assert CodexHarness().subagent_usage(env, "../*", STARTED) is None


def test_what_a_sub_agent_used_before_the_call_started_is_not_counted_again(
    tmp_path: Path,
) -> None:
    # A Resume's call: the helper's request was an earlier call's.
    env = {"CODEX_HOME": str(codex_home(tmp_path))}
    later = datetime.fromisoformat("2026-12-07T04:14:28+00:00").timestamp()
    assert CodexHarness().subagent_usage(env, MAIN, later) == Usage(
        input_tokens=0, output_tokens=0, cached_input_tokens=0, subagents="counted"
    )


def test_rollouts_not_changed_since_the_call_started_are_not_read(tmp_path: Path) -> None:
    home = codex_home(tmp_path)
    helper = rollout(home, HELPER)
    os.utime(helper, (STARTED - 60, STARTED - 60))  # an earlier call's, left alone since
    assert CodexHarness().subagent_usage({"CODEX_HOME": str(home)}, MAIN, STARTED) == Usage(
        input_tokens=0, output_tokens=0, cached_input_tokens=0, subagents="counted"
    )


def test_a_sub_agents_own_sub_agents_count_too(tmp_path: Path) -> None:
    home = codex_home(tmp_path)
    helper = rollout(home, HELPER)
    grandchild = "01a24eb5-dddd-7821-aadf-d3bb1c67844c"
    lines = []
    for line in helper.read_text().splitlines():
        event = json.loads(line)
        payload = event["payload"]
        if event["type"] == "session_meta" and payload["id"] == HELPER:
            payload.update(id=grandchild, parent_thread_id=HELPER)
        if event["type"] == "token_usage_record":
            payload["thread_id"] = grandchild
        lines.append(json.dumps(event))
    helper.with_name(f"rollout-2026-12-07T04-14-28-{grandchild}.jsonl").write_text(
        "\n".join(lines) + "\n"
    )
    assert CodexHarness().subagent_usage({"CODEX_HOME": str(home)}, MAIN, STARTED) == Usage(
        input_tokens=20, output_tokens=10, cached_input_tokens=0, subagents="counted"
    )


def test_a_resumes_reader_is_told_the_earlier_calls_in_its_streams_terms() -> None:
    # Codex reports a Resume's tokens from the session's start, its own thread's alone: what the
    # sub-agents added to the earlier calls must not be taken off them too.
    subagents = SubagentUsage()

    class Home(CodexHarness):
        def subagent_usage(
            self, env: Mapping[str, str], session_id: str, since: float
        ) -> Usage | None:
            return HELPERS_ONE_REQUEST

    reader = CodexReader()
    subagents.read(Home(), reader, {}, MAIN, STARTED)
    assert reader.usage is None  # no turn completed: nothing to add them to
    earlier = Usage(turns=1, input_tokens=30, output_tokens=15, cached_input_tokens=0)

    assert subagents.in_stream_terms(MAIN, earlier) == Usage(
        turns=1, input_tokens=20, output_tokens=10, cached_input_tokens=0
    )
    assert subagents.in_stream_terms("another", earlier) == earlier
