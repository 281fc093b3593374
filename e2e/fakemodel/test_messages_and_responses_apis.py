"""FakeModel in-process: both APIs spoken to with a plain HTTP client, scripts, faults, records."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from thirdshift.harness._builtin.codex import CodexHarness
from thirdshift.testing import steps
from thirdshift.testing.fakecli import FakeCLIs
from thirdshift.testing.fakecli import _steps as cli_steps
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.steps import (
    at_capacity,
    background,
    edit,
    hang,
    http_error,
    load_skill,
    quota_spent,
    run,
    say,
    stall,
    too_many_requests,
)

CLAUDE_TOOLS = [{"name": "Bash"}, {"name": "Read"}, {"name": "Write"}, {"name": "Skill"}]
CODEX_TOOLS = [
    {"type": "function", "name": "exec_command"},
    {"type": "custom", "name": "apply_patch"},
]


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as started:
        yield started


def credentials(model: FakeModel, path: str) -> dict[str, str]:
    """The model's key, carried as the real CLI of the API at ``path`` carries it."""
    if path.startswith("/v1/messages"):
        return {"x-api-key": model.key}
    if path.startswith("/v1beta/"):
        return {"x-goog-api-key": model.key}
    return {"authorization": f"Bearer {model.key}"}


def post(
    model: FakeModel, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", int(model.url.rsplit(":", 1)[1]))
    sent = {"content-type": "application/json", **credentials(model, path), **(headers or {})}
    connection.request("POST", path, json.dumps(body), sent)
    return connection.getresponse()


def sse(response: http.client.HTTPResponse) -> list[dict[str, Any]]:
    """The events of a stream, checked to be framed as ``event:`` / ``data:`` pairs."""
    assert response.getheader("transfer-encoding") == "chunked"
    assert response.getheader("content-type") == "text/event-stream"
    events = []
    for frame in response.read().decode().split("\n\n"):
        if not frame:
            continue
        name, data = frame.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        events.append(event)
    return events


def claude_request(
    text: str = "go", *, session: str = "s1", stream: bool = True, **extra: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "model": "claude-opus-4-8",
        "stream": stream,
        "tools": CLAUDE_TOOLS,
        "system": [{"type": "text", "text": "Env\n - Primary working directory: /nowhere/cwd\n"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        **extra,
    }
    return body, {"x-claude-code-session-id": session}


def claude(model: FakeModel, text: str = "go", **options: Any) -> http.client.HTTPResponse:
    body, headers = claude_request(text, **options)
    return post(model, "/v1/messages?beta=true", body, headers)


def tool_uses(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The tool uses a stream carries, with their input put back together."""
    uses, names = [], {}
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            names[event["index"]] = event["content_block"]["name"]
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
            uses.append((names[event["index"]], json.loads(event["delta"]["partial_json"])))
    return uses


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [
        event["delta"]["text"]
        for event in events
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta"
    ]


def stop_reason(events: list[dict[str, Any]]) -> str:
    reason = next(e["delta"]["stop_reason"] for e in events if e["type"] == "message_delta")
    assert isinstance(reason, str)
    return reason


def codex(
    model: FakeModel, text: str = "go", *, session: str = "t1", items: list[Any] | None = None
) -> http.client.HTTPResponse:
    environment = "<environment_context>\n  <cwd>/nowhere/cwd</cwd>\n</environment_context>"
    body = {
        "model": "gpt-5.5",
        "stream": True,
        "tools": CODEX_TOOLS,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": environment}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
            *(items or []),
        ],
    }
    return post(model, "/v1/responses", body, {"session-id": session})


def test_it_serves_on_loopback_only_and_stops_when_closed() -> None:
    with FakeModel() as model:
        host, port = model.url.removeprefix("http://").split(":")
        assert host == "127.0.0.1"
        assert model.claude.requests == []
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection((host, int(port)), timeout=5),
    ):
        pass


def test_a_client_that_resets_its_connection_is_not_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Qwen resets its connections as it exits: the server says nothing of it on stderr.
    with FakeModel() as model:
        host, port = model.url.removeprefix("http://").split(":")
        for _ in range(3):
            client = socket.create_connection((host, int(port)), timeout=5)
            client.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            # SO_LINGER 0: the close sends a reset, not a FIN, to the handler's read.
            client.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            client.close()
        time.sleep(0.5)  # the handlers' threads have read their reset by now
    assert "Traceback" not in capsys.readouterr().err


def test_start_and_close_work_without_a_with_block() -> None:
    model = FakeModel().start()
    try:
        model.claude.script(say("hi"))
        assert texts(sse(claude(model))) == ["hi"]
    finally:
        model.close()


def test_a_claude_tool_turn_streams_the_messages_event_sequence(model: FakeModel) -> None:
    model.claude.script(run("make test"), say("green"))
    events = sse(claude(model))
    assert [event["type"] for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert tool_uses(events) == [("Bash", {"command": "make test", "description": "make test"})]
    assert stop_reason(events) == "tool_use"
    assert events[0]["message"]["model"] == "claude-opus-4-8"

    last = sse(claude(model))
    assert texts(last) == ["green"]
    assert stop_reason(last) == "end_turn"


def test_background_edit_and_load_skill_become_claudes_tool_calls(
    model: FakeModel, tmp_path: Path
) -> None:
    (tmp_path / "old.txt").write_text("before\n")
    model.claude.script(
        background("sleep 300", description="wait"),
        edit("new.txt", "fresh"),
        edit(str(tmp_path / "old.txt"), "after"),
        load_skill("review"),
    )
    calls = [tool_uses(sse(claude(model))) for _ in range(5)]
    assert calls == [
        [("Bash", {"command": "sleep 300", "description": "wait", "run_in_background": True})],
        [("Write", {"file_path": "/nowhere/cwd/new.txt", "content": "fresh"})],
        [("Read", {"file_path": str(tmp_path / "old.txt")})],  # Claude writes only what it read
        [("Write", {"file_path": str(tmp_path / "old.txt"), "content": "after"})],
        [("Skill", {"skill": "review"})],
    ]
    assert texts(sse(claude(model))) == ["Done."]


def test_one_step_object_is_played_by_a_fake_cli_and_answered_by_the_fake_model(
    model: FakeModel, tmp_path: Path
) -> None:
    step = steps.edit("note.txt", "one scenario, two doubles\n")
    fakes = FakeCLIs.create(tmp_path / "fakecli")
    fakes.claude.script(step)
    model.claude.script(step)
    cwd = tmp_path / "work"
    cwd.mkdir()

    done = subprocess.run(
        [str(fakes.claude.path), "-p", "go", "--output-format", "stream-json", "--verbose"],
        cwd=cwd,
        env=fakes.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert (cwd / "note.txt").read_text() == "one scenario, two doubles\n"
    assert tool_uses(sse(claude(model))) == [
        ("Write", {"file_path": "/nowhere/cwd/note.txt", "content": "one scenario, two doubles\n"})
    ]
    assert fakes.problems() == []


def test_the_five_shared_step_makers_are_the_fake_clis_own() -> None:
    from_the_fake_model = (run, background, edit, load_skill, say)
    from_the_fake_clis = (steps.run, steps.background, steps.edit, steps.load_skill)
    assert from_the_fake_model == (*from_the_fake_clis, steps.say)


def test_hang_and_http_error_are_one_step_each_for_the_fake_clis_and_the_model() -> None:
    assert (hang, http_error) == (steps.hang, steps.http_error)
    assert steps.hang(timeout=1.0) == hang(timeout=1.0)
    with FakeModel() as model:
        model.claude.script(steps.hang(), steps.http_error(401))  # both played, none refused
        assert model.problems() == ["claude: a script was never used: hang(), http_error(401)"]


def test_background_grace_is_ignored_the_real_cli_keeps_its_own(model: FakeModel) -> None:
    model.claude.script(background("sleep 300", grace=5.0), background("sleep 300"))
    with_grace, without = (tool_uses(sse(claude(model))) for _ in range(2))
    assert with_grace == without


@pytest.mark.parametrize(
    ("step", "name"),
    [
        (cli_steps.die("SIGKILL"), "die"),
        (steps.exit(3), "exit"),
        (cli_steps.escape_setsid(30), "escape_setsid"),
        (cli_steps.raw(b"x"), "raw"),
    ],
)
def test_a_fake_cli_only_step_is_refused_with_its_name(
    model: FakeModel, step: steps.Step, name: str
) -> None:
    with pytest.raises(TypeError) as refused:
        model.claude.script(say("before"), step)
    assert str(refused.value) == (
        f"claude.script: {name}() is a step of the fake CLIs only; the fake model plays run, "
        "background, edit, load_skill, say and its own faults (thirdshift.testing.fakemodel: "
        "http_error, at_capacity, too_many_requests, quota_spent, hang, stall)"
    )
    assert model.problems() == []  # nothing of the refused script was queued


def test_a_value_that_is_no_step_at_all_is_refused(model: FakeModel) -> None:
    with pytest.raises(TypeError, match=r"^codex.script: not a fake model step: 'make test'$"):
        model.codex.script("make test")  # type: ignore[arg-type]


def test_what_the_script_says_before_a_tool_call_goes_in_the_same_message(
    model: FakeModel,
) -> None:
    model.claude.script(say("first I test"), run("make test"), say("one"), say("two"))
    events = sse(claude(model))
    assert texts(events) == ["first I test"]
    assert [name for name, _ in tool_uses(events)] == ["Bash"]
    assert texts(sse(claude(model))) == ["one", "two"]


def test_a_request_without_a_stream_gets_the_message_as_json(model: FakeModel) -> None:
    model.claude.script(say("plain"))
    response = claude(model, stream=False)
    message = json.loads(response.read())
    assert response.getheader("content-type") == "application/json"
    assert message["content"] == [{"type": "text", "text": "plain"}]
    assert message["stop_reason"] == "end_turn"


def test_side_requests_get_a_short_reply_and_consume_nothing(model: FakeModel) -> None:
    model.claude.script(say("the real answer"))
    title = post(model, "/v1/messages", {"model": "claude-haiku", "messages": [], "stream": True})
    assert texts(sse(title)) == ["ok"]
    classifier = {
        "model": "claude-opus-4-8",
        "system": "Answer with <block>yes or <block>no.",
        "messages": [{"role": "user", "content": "<transcript>rm -rf build</transcript>"}],
    }
    answer = json.loads(post(model, "/v1/messages", classifier).read())
    assert answer["content"] == [{"type": "text", "text": "<block>no"}]
    counted = json.loads(post(model, "/v1/messages/count_tokens", {"messages": []}).read())
    assert counted == {"input_tokens": 1}

    assert texts(sse(claude(model))) == ["the real answer"]
    assert [request.side for request in model.claude.requests] == [True, True, True, False]
    assert model.problems() == []


def test_each_session_takes_its_own_script_and_a_finished_one_takes_the_next(
    model: FakeModel,
) -> None:
    model.claude.script(run("a"), say("first session"))
    model.claude.script(say("second session"))
    model.claude.script(say("the resume"))
    assert [name for name, _ in tool_uses(sse(claude(model, session="one")))] == ["Bash"]
    assert texts(sse(claude(model, session="two"))) == ["second session"]
    assert texts(sse(claude(model, session="one"))) == ["first session"]
    assert texts(sse(claude(model, "continue", session="one"))) == ["the resume"]
    assert model.problems() == []


def test_a_request_that_finds_no_script_is_refused_and_reported(model: FakeModel) -> None:
    response = claude(model, "hello?", session="lost")
    error = json.loads(response.read())
    assert response.status == 400
    assert error["error"]["type"] == "invalid_request_error"
    assert model.problems() == [
        "claude: a request found no script: /v1/messages, session lost, last user text 'hello?'"
    ]
    assert model.claude.requests[0].reply == "no script"


def test_script_left_unused_is_reported_unless_allowed(model: FakeModel) -> None:
    model.claude.script(run("a"), say("b"))
    model.codex.script(say("never"))
    sse(claude(model))
    assert model.problems() == [
        "claude: a script was left with 1 of its replies unsent (steps: run('a'), say('b'))",
        "codex: a script was never used: say('never')",
    ]
    assert model.problems(include_unconsumed=False) == []


def test_a_fault_that_ends_the_session_leaves_no_unused_script(model: FakeModel) -> None:
    model.claude.script(http_error(401))
    claude(model).read()
    assert model.problems() == []


def test_a_fault_that_ends_its_script_answers_every_retry_of_its_request(
    model: FakeModel,
) -> None:
    # A CLI retries a 401 with the same request: the retry must not get the end of the turn.
    model.claude.script(http_error(401, message="bad key"))
    model.codex.script(at_capacity())
    claude_answers = [claude(model) for _ in range(3)]
    codex_answers = [codex(model) for _ in range(3)]
    assert [answer.status for answer in claude_answers] == [401, 401, 401]
    assert {json.loads(answer.read())["error"]["message"] for answer in claude_answers} == {
        "bad key"
    }
    assert [answer.status for answer in codex_answers] == [503, 503, 503]
    assert [r.reply for r in model.claude.requests] == ["http_error(401)"] * 3
    assert [r.reply for r in model.codex.requests] == ["at_capacity()"] * 3
    assert model.problems() == []


def test_after_a_held_fault_another_request_of_the_session_takes_the_next_script(
    model: FakeModel,
) -> None:
    model.claude.script(http_error(401))
    model.claude.script(say("resumed"))
    assert claude(model, "go").status == 401
    assert claude(model, "go").status == 401  # its retry
    # Another place in the conversation (a Resume of the session): the CLI gave up the first.
    assert texts(sse(claude(model, "go on"))) == ["resumed"]
    assert [r.reply for r in model.claude.requests] == [
        "http_error(401)",
        "http_error(401)",
        "end_turn",
    ]
    assert model.problems() == []


def test_withdraw_drops_only_the_scripts_no_session_took(model: FakeModel) -> None:
    model.claude.script(run("a"), say("b"))
    model.claude.script(say("for a turn that never came"))
    sse(claude(model))
    assert model.claude.withdraw() == 1
    assert texts(sse(claude(model))) == ["b"]  # the script being played goes on
    assert model.problems() == []


def test_a_held_fault_is_its_sessions_own(model: FakeModel) -> None:
    model.claude.script(http_error(500))
    model.claude.script(say("other session"))
    assert claude(model, session="s1").status == 500
    assert texts(sse(claude(model, session="s2"))) == ["other session"]
    assert claude(model, session="s1").status == 500


def test_each_fault_is_one_request_and_retries_take_the_next_steps(model: FakeModel) -> None:
    model.claude.script(
        at_capacity(), too_many_requests(2), http_error(500, message="boom"), say("ok")
    )
    first, second, third = (claude(model) for _ in range(3))
    assert (first.status, json.loads(first.read())["error"]["type"]) == (529, "overloaded_error")
    assert (second.status, second.getheader("retry-after")) == (429, "2")
    assert json.loads(second.read())["error"]["type"] == "rate_limit_error"
    assert (third.status, json.loads(third.read())["error"]["message"]) == (500, "boom")
    assert texts(sse(claude(model))) == ["ok"]
    assert [r.reply for r in model.claude.requests] == [
        "at_capacity()",
        "too_many_requests(2)",
        "http_error(500)",
        "end_turn",
    ]


def test_http_error_carries_the_given_headers_and_retry_after(model: FakeModel) -> None:
    model.codex.script(http_error(503, retry_after=1.5, headers={"x-why": "maintenance"}))
    response = codex(model)
    assert response.status == 503
    assert response.getheader("retry-after") == "1.5"
    assert response.getheader("x-why") == "maintenance"


def test_http_error_refuses_a_status_that_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="400-599"):
        http_error(200)


def test_usage_limit_speaks_each_apis_own_way(model: FakeModel) -> None:
    resets = time.time() + 3600
    model.claude.script(quota_spent(resets))
    model.codex.script(quota_spent(resets))
    anthropic = claude(model)
    assert anthropic.status == 429
    assert anthropic.getheader("anthropic-ratelimit-unified-status") == "rejected"
    assert anthropic.getheader("anthropic-ratelimit-unified-reset") == str(int(resets))
    openai = codex(model)
    error = json.loads(openai.read())["error"]
    assert openai.status == 429
    assert error["type"] == "usage_limit_reached"
    assert error["resets_at"] == int(resets)


def test_overloaded_is_a_503_server_is_overloaded_for_codex(model: FakeModel) -> None:
    model.codex.script(at_capacity())
    response = codex(model)
    assert response.status == 503
    assert json.loads(response.read())["error"]["code"] == "server_is_overloaded"


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_hang_answers_nothing_until_the_model_closes() -> None:
    model = FakeModel().start()
    model.claude.script(hang())
    outcome: list[BaseException] = []

    def ask() -> None:
        try:
            claude(model)
        except (http.client.HTTPException, OSError) as error:
            outcome.append(error)

    asking = threading.Thread(target=ask)
    asking.start()
    wait_for(lambda: model.claude.requests, "the request to arrive")
    assert asking.is_alive()
    model.close()
    asking.join()
    assert isinstance(outcome[0], http.client.RemoteDisconnected)


def test_stall_sends_the_first_events_then_nothing_until_the_model_closes() -> None:
    model = FakeModel().start()
    model.codex.script(stall())
    response = codex(model)
    assert response.status == 200
    first = response.fp.readline() + response.fp.readline() + response.fp.readline()
    assert b"event: response.created" in first
    model.close()
    with pytest.raises(http.client.IncompleteRead):
        response.read()


def test_a_codex_tool_turn_streams_the_responses_events(model: FakeModel) -> None:
    model.codex.script(say("on it"), run("make test"), background("sleep 300"), say("done"))
    events = sse(codex(model))
    assert [event["type"] for event in events] == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    message, call = (event["item"] for event in events if event["type"].endswith(".done"))
    assert message["content"][0]["text"] == "on it"
    assert call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "make test", "yield_time_ms": 30000}
    assert events[-1]["response"]["usage"]["input_tokens"] > 0

    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "passed"}
    next_call = sse(codex(model, items=[call, output]))[2]["item"]
    assert json.loads(next_call["arguments"]) == {"cmd": "sleep 300", "yield_time_ms": 1000}
    assert model.codex.requests[1].tool_results == ("passed",)
    final = sse(codex(model))
    assert final[2]["item"]["content"][0]["text"] == "done"


def test_a_foreground_command_codex_returned_from_is_polled_to_its_end(model: FakeModel) -> None:
    model.codex.script(run("make slow"), background("sleep 300"), say("done"))
    call = sse(codex(model))[2]["item"]
    running = "Chunk ID: 1\nWall time: 30.0 seconds\nProcess running with session ID 42\n"
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": running}
    poll = sse(codex(model, items=[call, output]))[2]["item"]
    assert poll["name"] == "write_stdin"
    assert json.loads(poll["arguments"])["session_id"] == 42
    exited = {"type": "function_call_output", "call_id": poll["call_id"], "output": "exited 0"}
    started = sse(codex(model, items=[call, output, poll, exited]))[2]["item"]
    assert json.loads(started["arguments"])["cmd"] == "sleep 300"
    # A background command is left running: the model moves on.
    left = {"type": "function_call_output", "call_id": started["call_id"], "output": running}
    final = sse(codex(model, items=[started, left]))[2]["item"]
    assert final["content"][0]["text"] == "done"
    assert [request.reply for request in model.codex.requests] == [
        "run('make slow')",
        "poll",
        "background('sleep 300')",
        "end_turn",
    ]
    assert model.problems() == []


def test_codex_edits_with_apply_patch_and_loads_skills_with_cat(
    model: FakeModel, tmp_path: Path
) -> None:
    (tmp_path / "old.txt").write_text("one\ntwo\n")
    model.codex.script(
        edit("new.txt", "a\nb\n"), edit(str(tmp_path / "old.txt"), "three\n"), load_skill("review")
    )
    add, update, skill = (sse(codex(model))[2]["item"] for _ in range(3))
    assert (add["type"], add["name"]) == ("custom_tool_call", "apply_patch")
    assert add["input"] == "*** Begin Patch\n*** Add File: new.txt\n+a\n+b\n*** End Patch\n"
    assert update["input"] == (
        f"*** Begin Patch\n*** Update File: {tmp_path / 'old.txt'}\n@@\n-one\n-two\n+three\n"
        "*** End Patch\n"
    )
    assert json.loads(skill["arguments"])["cmd"] == "cat .agents/skills/review/SKILL.md"


def test_codex_side_requests_and_the_model_list(model: FakeModel) -> None:
    side = post(model, "/v1/responses", {"model": "gpt-5.5", "input": [], "stream": True})
    assert sse(side)[2]["item"]["content"][0]["text"] == "ok"
    connection = http.client.HTTPConnection("127.0.0.1", int(model.url.rsplit(":", 1)[1]))
    connection.request("GET", "/v1/models?client_version=0.171.0", headers=credentials(model, ""))
    listing = connection.getresponse()
    assert listing.status == 200
    assert json.loads(listing.read())["models"] == []
    assert model.codex.requests[0].side


def test_every_request_is_recorded_with_what_a_test_asserts_on(model: FakeModel) -> None:
    model.claude.script(run("ls"))
    model.codex.script(say("hi"))
    claude(model, "build it", session="abc").read()
    body, headers = claude_request("ignored", session="abc")
    body["messages"] = [
        *body["messages"],
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "file.txt"},
                {"type": "text", "text": "<system-reminder>noise</system-reminder>"},
            ],
        },
    ]
    post(model, "/v1/messages", body, headers).read()
    skill = {"type": "input_text", "text": "<skill>\n<name>review</name>\n</skill>"}
    inlined = {"type": "message", "role": "user", "content": [skill]}
    codex(model, "RESUME: carry on", session="thread-9", items=[inlined]).read()

    first, second = model.claude.requests
    assert (first.path, first.model, first.side) == ("/v1/messages", "claude-opus-4-8", False)
    assert (first.user_text, first.tool_results, first.session_id) == ("build it", (), "abc")
    assert first.reply == "run('ls')"
    assert (second.user_text, second.tool_results) == ("ignored", ("file.txt",))
    assert second.reply == "end_turn"
    (resumed,) = model.codex.requests
    assert (resumed.user_text, resumed.session_id, resumed.model) == (
        "RESUME: carry on",
        "thread-9",
        "gpt-5.5",
    )


def test_a_hostile_body_is_a_side_request_not_a_crash(model: FakeModel) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", int(model.url.rsplit(":", 1)[1]))
    deep = b"[" * 100_000 + b"]" * 100_000
    for raw in (b"not json", b"[1, 2]", b'{"tools": "Bash", "messages": 7}', deep):
        connection.request("POST", "/v1/messages", raw, credentials(model, "/v1/messages"))
        response = connection.getresponse()
        assert response.status == 200
        response.read()
    assert [request.side for request in model.claude.requests] == [True, True, True, True]


@pytest.mark.parametrize(
    "lengths", [["many"], ["-5"], ["5", "7"]], ids=["not-a-number", "negative", "two"]
)
def test_a_content_length_that_cannot_be_trusted_is_refused(
    model: FakeModel, lengths: list[str]
) -> None:
    port = int(model.url.rsplit(":", 1)[1])
    head = f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: {model.key}\r\n"
    head += "".join(f"Content-Length: {length}\r\n" for length in lengths)
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.sendall(f"{head}\r\n".encode())
        answer = raw.makefile("rb").readline()
    assert answer.startswith(b"HTTP/1.1 400")
    assert model.claude.requests == []


def test_env_points_both_clis_here_from_an_isolated_home(model: FakeModel, tmp_path: Path) -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "ANTHROPIC_AUTH_TOKEN": "real-secret",
        "OPENAI_API_KEY": "real-secret",
        "CODEX_API_KEY": "real-secret",
        "CLAUDE_CONFIG_DIR": "/root/.claude",
        "TMPDIR": "/tmp",
    }
    env = model.env(tmp_path / "home", base=base)
    assert env["PATH"] == "/usr/bin"
    assert env["HOME"] == str(tmp_path / "home")
    assert env["CODEX_HOME"] == str(tmp_path / "home" / ".codex")
    assert env["ANTHROPIC_BASE_URL"] == model.url
    assert "real-secret" not in env.values()
    assert "CLAUDE_CONFIG_DIR" not in env
    for switch in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING"):
        assert env[switch] == "1"
    assert "127.0.0.1" in env["NO_PROXY"].split(",")
    config = tomllib.loads((tmp_path / "home" / ".codex" / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == f"{model.url}/v1"
    assert provider["wire_api"] == "responses"
    assert env[provider["env_key"]]
    assert config["analytics"] == {"enabled": False}
    assert os.stat(tmp_path / "home" / ".codex").st_mode & 0o077 == 0
    # Every CLI's temporary files stay in the test's folder, in folders only its user can read.
    assert env["TMPDIR"] == str(tmp_path / "home" / "tmp")
    assert env["CLAUDE_CODE_TMPDIR"] == str(tmp_path / "home" / "claude-tmp")
    for private in ("tmp", "claude-tmp"):
        assert os.stat(tmp_path / "home" / private).st_mode & 0o077 == 0


def test_env_for_a_subscriber_gives_claude_a_login_token_instead_of_a_key(
    model: FakeModel, tmp_path: Path
) -> None:
    keyed = model.env(tmp_path / "home", base={"CLAUDE_CODE_OAUTH_TOKEN": "real-secret"})
    assert "CLAUDE_CODE_OAUTH_TOKEN" not in keyed
    assert keyed["ANTHROPIC_API_KEY"] == model.key
    subscriber = model.env(tmp_path / "home", base={"ANTHROPIC_API_KEY": "real"}, subscriber=True)
    assert "ANTHROPIC_API_KEY" not in subscriber
    assert subscriber["CLAUDE_CODE_OAUTH_TOKEN"] == model.key


def test_env_writes_what_the_minimal_policy_would_drop_where_it_cannot(
    model: FakeModel, tmp_path: Path
) -> None:
    env = model.env(tmp_path / "home", base={})
    config = tomllib.loads((tmp_path / "home" / ".codex" / "config.toml").read_text())
    key = config["model_providers"][config["model_provider"]]["env_key"]
    assert key in CodexHarness.env_passthrough  # a variable `minimal` passes on to Codex
    assert env[key] == model.key
    settings = json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text())
    assert settings["env"]["ANTHROPIC_BASE_URL"] == model.url
    for switch in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING"):
        assert settings["env"][switch] == "1"
