"""FakeModel's Chat Completions (opencode, Qwen Code) and Gemini APIs, with a plain HTTP client."""

from __future__ import annotations

import http.client
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_thirdshift._fake_model import require_on_path
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.fakemodel._installing import NPM_PACKAGES, install_command
from thirdshift.testing.fakemodel._schema import filled
from thirdshift.testing.steps import (
    at_capacity,
    background,
    edit,
    http_error,
    load_skill,
    quota_spent,
    run,
    say,
    stall,
    too_many_requests,
)

OPENCODE = "/opencode/v1/chat/completions"
QWEN = "/qwen/v1/chat/completions"
GEMINI_TURN = "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse"
GEMINI_ONE = "/v1beta/models/gemini-3.5-flash-lite:generateContent"


def schema(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}}


OPENCODE_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": schema(*arguments)}}
    for name, arguments in {
        "bash": ("command", "timeout", "workdir"),
        "read": ("filePath", "offset", "limit"),
        "write": ("content", "filePath"),
        "skill": ("name",),
    }.items()
]
QWEN_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": schema(*arguments)}}
    for name, arguments in {
        "run_shell_command": ("command", "is_background", "description"),
        "read_file": ("file_path",),
        "write_file": ("file_path", "content"),
        "skill": ("skill", "args"),
    }.items()
]
GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "run_shell_command",
                "parametersJsonSchema": schema("command", "is_background"),
            },
            {"name": "write_file", "parametersJsonSchema": schema("file_path", "content")},
            {"name": "activate_skill", "parametersJsonSchema": schema("name")},
        ]
    }
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


def data_lines(response: http.client.HTTPResponse) -> list[Any]:
    """A stream's ``data:`` payloads, checked to be bare ``data:`` frames (no ``event:``)."""
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream"
    payloads: list[Any] = []
    for frame in response.read().decode().split("\n\n"):
        if not frame:
            continue
        assert frame.startswith("data: "), frame
        assert "\n" not in frame, frame
        text = frame.removeprefix("data: ")
        payloads.append(text if text == "[DONE]" else json.loads(text))
    return payloads


def chat(
    model: FakeModel,
    path: str,
    *,
    tools: list[dict[str, Any]] | None = None,
    messages: list[dict[str, Any]] | None = None,
    session: str | None = "ses_1",
    **extra: Any,
) -> http.client.HTTPResponse:
    body = {
        "model": "mock-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": OPENCODE_TOOLS if tools is None else tools,
        "messages": messages
        or [
            {"role": "system", "content": "<env>\n  Working directory: /nowhere/cwd\n</env>"},
            {"role": "user", "content": "go"},
        ],
        **extra,
    }
    return post(model, path, body, {"x-session-id": session} if session else {})


def calls_of(chunks: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of a streamed completion, put together from their deltas."""
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}
    for chunk in chunks:
        if chunk == "[DONE]" or not chunk["choices"]:
            continue
        for delta in chunk["choices"][0]["delta"].get("tool_calls", []):
            if "name" in delta["function"]:
                names[delta["index"]] = delta["function"]["name"]
            arguments[delta["index"]] = (
                arguments.get(delta["index"], "") + delta["function"]["arguments"]
            )
    return [(names[index], json.loads(arguments[index])) for index in sorted(names)]


def text_of(chunks: list[Any]) -> str:
    return "".join(
        chunk["choices"][0]["delta"].get("content") or ""
        for chunk in chunks
        if chunk != "[DONE]" and chunk["choices"]
    )


def finish_of(chunks: list[Any]) -> str:
    reasons: list[str] = [
        chunk["choices"][0]["finish_reason"]
        for chunk in chunks
        if chunk != "[DONE]" and chunk["choices"] and chunk["choices"][0]["finish_reason"]
    ]
    assert len(reasons) == 1
    return reasons[0]


def test_a_chat_tool_turn_streams_tool_call_deltas_usage_and_done(model: FakeModel) -> None:
    model.opencode.script(run("make test", description="Run the tests"), say("green"))

    chunks = data_lines(chat(model, OPENCODE))

    assert chunks[-1] == "[DONE]"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks[:-1])
    assert calls_of(chunks) == [("bash", {"command": "make test"})]
    assert finish_of(chunks) == "tool_calls"
    (usage,) = [chunk for chunk in chunks[:-1] if "usage" in chunk]
    assert usage["choices"] == []
    assert usage["usage"]["total_tokens"] == 15
    # The call's name comes in one delta, its arguments in the next, as OpenAI streams them.
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1] if c["choices"]]
    opening, rest = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert opening["function"] == {"name": "bash", "arguments": ""}
    assert opening["id"].startswith("call_")
    assert "name" not in rest["function"]

    last = data_lines(chat(model, OPENCODE))
    assert text_of(last) == "green"
    assert finish_of(last) == "stop"
    assert model.problems() == []


def test_no_usage_chunk_unless_the_request_asks_for_one(model: FakeModel) -> None:
    model.qwen.script(say("hi"))
    chunks = data_lines(chat(model, QWEN, tools=QWEN_TOOLS, stream_options={}))
    assert not [chunk for chunk in chunks[:-1] if "usage" in chunk]
    assert text_of(chunks) == "hi"


def test_background_is_the_flag_where_the_shell_tool_has_one_else_a_detached_shell_job(
    model: FakeModel,
) -> None:
    model.qwen.script(background("sleep 300", description="sleep"))
    model.opencode.script(background("sleep 300"))

    qwen = calls_of(data_lines(chat(model, QWEN, tools=QWEN_TOOLS)))
    opencode = calls_of(data_lines(chat(model, OPENCODE)))

    assert qwen == [
        (
            "run_shell_command",
            {"command": "sleep 300", "is_background": True, "description": "sleep"},
        )
    ]
    command = "(sleep 300) </dev/null >/dev/null 2>&1 &"
    assert opencode == [("bash", {"command": command})]
    assert [r.reply for r in model.qwen.requests] == ["background('sleep 300')"]


def test_each_cli_plays_its_own_scripts(model: FakeModel) -> None:
    model.qwen.script(say("from qwen's script"))
    response = chat(model, OPENCODE)
    assert response.status == 400
    assert "no script" in json.loads(response.read())["error"]["message"]
    assert text_of(data_lines(chat(model, QWEN, tools=QWEN_TOOLS))) == "from qwen's script"
    (problem,) = model.problems()
    assert problem.startswith("opencode: a request found no script")


def test_an_edit_reads_an_existing_file_first_with_the_tools_own_argument_names(
    model: FakeModel, tmp_path: Path
) -> None:
    (tmp_path / "old.txt").write_text("old\n")
    system = {"role": "system", "content": f"<env>\n  Working directory: {tmp_path}\n</env>"}
    messages = [system, {"role": "user", "content": "edit"}]
    model.opencode.script(edit("new.txt", "new\n"), edit("old.txt", "replaced\n"))

    answers = [calls_of(data_lines(chat(model, OPENCODE, messages=messages))) for _ in range(3)]

    assert answers == [
        [("write", {"filePath": str(tmp_path / "new.txt"), "content": "new\n"})],
        [("read", {"filePath": str(tmp_path / "old.txt")})],
        [("write", {"filePath": str(tmp_path / "old.txt"), "content": "replaced\n"})],
    ]


def test_qwen_finds_its_cwd_in_its_prompt_and_writes_with_file_path(
    model: FakeModel, tmp_path: Path
) -> None:
    user = {"role": "user", "content": f"I'm currently working in the directory: {tmp_path}\n"}
    model.qwen.script(edit("a.txt", "A"))
    calls = calls_of(data_lines(chat(model, QWEN, tools=QWEN_TOOLS, messages=[user])))
    assert calls == [("write_file", {"file_path": str(tmp_path / "a.txt"), "content": "A"})]


def test_load_skill_uses_the_skill_tool_when_offered_else_cat(model: FakeModel) -> None:
    model.opencode.script(load_skill("review"), load_skill("review"))
    model.qwen.script(load_skill("review"))

    assert calls_of(data_lines(chat(model, OPENCODE))) == [("skill", {"name": "review"})]
    qwen = calls_of(data_lines(chat(model, QWEN, tools=QWEN_TOOLS)))
    shell_only = calls_of(data_lines(chat(model, OPENCODE, tools=OPENCODE_TOOLS[:1])))

    assert qwen == [("skill", {"skill": "review"})]
    assert shell_only == [("bash", {"command": "cat .agents/skills/review/SKILL.md"})]


def test_chat_side_requests_consume_nothing_and_json_ones_get_a_fitting_object(
    model: FakeModel,
) -> None:
    model.opencode.script(say("the real answer"))

    title = data_lines(chat(model, OPENCODE, tools=[]))
    wanted = {
        "type": "json_schema",
        "json_schema": {"name": "memory", "schema": schema("summary")},
    }
    structured = data_lines(chat(model, OPENCODE, tools=[], response_format=wanted))

    assert text_of(title) == "ok"
    assert json.loads(text_of(structured)) == {"summary": "ok"}
    assert text_of(data_lines(chat(model, OPENCODE))) == "the real answer"
    assert [r.side for r in model.opencode.requests] == [True, True, False]
    assert model.problems() == []


def test_qwens_memory_agent_offers_a_shell_yet_is_a_side_request(model: FakeModel) -> None:
    model.qwen.script(say("the turn"))
    system = "You are now acting as the managed memory extraction subagent for an AI assistant."
    memory = [{"role": "system", "content": system}, {"role": "user", "content": "Scan it."}]

    helper = data_lines(chat(model, QWEN, tools=QWEN_TOOLS, messages=memory))

    assert text_of(helper) == "ok"
    assert text_of(data_lines(chat(model, QWEN, tools=QWEN_TOOLS))) == "the turn"
    assert [r.side for r in model.qwen.requests] == [True, False]


def test_a_chat_request_is_recorded_without_system_reminders_with_its_tool_results(
    model: FakeModel,
) -> None:
    model.qwen.script(run("ls"), say("done"))
    reminder = "<system-reminder>\nskills: review\n</system-reminder>"
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": reminder}, {"type": "text", "text": "list it"}],
        },
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
    ]
    chat(model, QWEN, tools=QWEN_TOOLS, session="qwen-7").read()
    chat(model, QWEN, tools=QWEN_TOOLS, messages=messages, session="qwen-7").read()

    first, second = model.qwen.requests
    assert (first.reply, second.reply) == ("run('ls')", "end_turn")
    assert second.user_text == "list it"
    assert second.tool_results == ("a.txt\nb.txt",)
    assert second.session_id == "qwen-7"
    assert second.model == "mock-model"
    assert second.path == QWEN


def test_a_chat_request_without_a_stream_gets_a_chat_completion(model: FakeModel) -> None:
    model.opencode.script(run("ls"))
    response = chat(model, OPENCODE, stream=False)
    assert response.getheader("content-type") == "application/json"
    completion = json.loads(response.read())
    assert completion["object"] == "chat.completion"
    (choice,) = completion["choices"]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"])["command"] == "ls"


def test_chat_faults_speak_openais_error_shape(model: FakeModel) -> None:
    model.qwen.script(
        http_error(401, message="Incorrect API key provided"),
        too_many_requests(7),
        quota_spent(2_000_000_000),
        at_capacity(),
        say("recovered"),
    )
    answers = [chat(model, QWEN, tools=QWEN_TOOLS) for _ in range(4)]

    statuses = [answer.status for answer in answers]
    errors = [json.loads(answer.read())["error"] for answer in answers]
    assert statuses == [401, 429, 429, 503]
    assert errors[0]["message"] == "Incorrect API key provided"
    assert errors[0]["type"] == "invalid_api_key"
    assert answers[1].getheader("retry-after") == "7"
    assert errors[2]["code"] == "insufficient_quota"
    assert text_of(data_lines(chat(model, QWEN, tools=QWEN_TOOLS))) == "recovered"


def gemini_body(contents: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "contents": contents
        or [
            {
                "role": "user",
                "parts": [
                    {"text": "<session_context>\n- **Workspace Directories:**\n  - /nowhere/cwd\n"},
                    {"text": "go\n"},
                ],
            }
        ],
        "tools": GEMINI_TOOLS,
        **extra,
    }


def gemini_parts(chunks: list[Any]) -> list[dict[str, Any]]:
    return [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]


def test_a_gemini_turn_streams_a_function_call_and_finishes_on_the_last_chunk(
    model: FakeModel,
) -> None:
    model.gemini.script(say("running it"), run("make test"), say("green"))

    chunks = data_lines(post(model, GEMINI_TURN, gemini_body()))

    assert gemini_parts(chunks) == [
        {"text": "running it"},
        {
            "functionCall": {
                "name": "run_shell_command",
                "args": {"command": "make test", "is_background": False},
            }
        },
    ]
    finishes = [chunk["candidates"][0].get("finishReason") for chunk in chunks]
    assert finishes == [None, "STOP"]
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] == 15
    assert chunks[-1]["modelVersion"] == "gemini-3.8-flash"

    last = data_lines(post(model, GEMINI_TURN, gemini_body()))
    assert gemini_parts(last) == [{"text": "green"}]
    assert model.problems() == []


def test_gemini_background_and_edit_and_skill_use_its_own_tools(model: FakeModel) -> None:
    model.gemini.script(background("sleep 300"), edit("out.txt", "x"), load_skill("review"))
    answers = [gemini_parts(data_lines(post(model, GEMINI_TURN, gemini_body()))) for _ in "abc"]
    assert [part["functionCall"] for (part,) in answers] == [
        {"name": "run_shell_command", "args": {"command": "sleep 300", "is_background": True}},
        {"name": "write_file", "args": {"file_path": "/nowhere/cwd/out.txt", "content": "x"}},
        {"name": "activate_skill", "args": {"name": "review"}},
    ]


def test_the_gemini_router_gets_an_object_that_fits_its_schema_and_consumes_nothing(
    model: FakeModel,
) -> None:
    model.gemini.script(say("the turn"))
    router_schema = {
        "type": "OBJECT",
        "properties": {
            "complexity_reasoning": {"type": "STRING"},
            "complexity_score": {"type": "INTEGER"},
        },
        "required": ["complexity_reasoning", "complexity_score"],
    }
    config = {"responseMimeType": "application/json", "responseJsonSchema": router_schema}
    body = gemini_body(tools=None, generationConfig=config)

    routed = post(model, GEMINI_ONE, body)
    counted = post(model, "/v1beta/models/gemini-3.8-flash:countTokens", gemini_body())

    answer = json.loads(routed.read())
    (part,) = answer["candidates"][0]["content"]["parts"]
    assert json.loads(part["text"]) == {"complexity_reasoning": "ok", "complexity_score": 1}
    assert answer["candidates"][0]["finishReason"] == "STOP"
    assert json.loads(counted.read()) == {"totalTokens": 1}
    assert gemini_parts(data_lines(post(model, GEMINI_TURN, gemini_body()))) == [
        {"text": "the turn"}
    ]
    assert [r.side for r in model.gemini.requests] == [True, True, False]


def test_a_gemini_request_is_recorded_without_the_session_context(model: FakeModel) -> None:
    model.gemini.script(run("ls"), say("done"))
    first = gemini_body()
    contents = [
        *first["contents"],
        {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "run_shell_command", "response": {"output": "a"}}}
            ],
        },
    ]
    post(model, GEMINI_TURN, first).read()
    post(model, GEMINI_TURN, gemini_body(contents)).read()

    asked, answered = model.gemini.requests
    assert asked.user_text == answered.user_text == "go"
    assert answered.tool_results == ("a",)
    assert answered.model == "gemini-3.8-flash"
    assert (asked.reply, answered.reply) == ("run('ls')", "end_turn")


def test_gemini_faults_speak_googles_error_shape(model: FakeModel) -> None:
    model.gemini.script(http_error(401), too_many_requests(3), quota_spent(2_000_000_000))
    answers = [post(model, GEMINI_TURN, gemini_body()) for _ in range(3)]
    errors = [json.loads(answer.read())["error"] for answer in answers]
    assert [error["code"] for error in errors] == [401, 429, 429]
    assert [error["status"] for error in errors] == [
        "UNAUTHENTICATED",
        "RESOURCE_EXHAUSTED",
        "RESOURCE_EXHAUSTED",
    ]
    assert errors[1]["details"][0]["retryDelay"] == "3s"
    assert answers[1].getheader("retry-after") == "3"
    assert errors[2]["details"][0]["@type"].endswith("QuotaFailure")


def test_filled_fits_enums_minimums_arrays_and_upper_case_types() -> None:
    assert filled({"type": "STRING", "enum": ["user", "model"]}) == "user"
    assert filled({"type": "number", "minimum": 5}) == 5
    assert filled({"type": ["null", "boolean"]}) is False
    assert filled({"type": "array", "items": {"type": "integer"}, "minItems": 2}) == [1, 1]
    assert filled({"anyOf": [{"const": "x"}, {"type": "string"}]}) == "x"
    assert filled({"properties": {"a": {"type": "object"}}}) == {"a": {}}


def test_filled_reads_a_hostile_schema_as_null_never_an_error() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"next": deep}}
    assert filled("not a schema") is None
    assert filled({"type": 7}) is None
    assert filled({"type": "array", "minItems": 10**9}) == []
    value = filled(deep)
    for _ in range(9):
        value = value["next"]
    assert value is None


def test_hostile_chat_and_gemini_bodies_are_side_requests(model: FakeModel) -> None:
    model.opencode.script(say("kept"))
    model.gemini.script(say("kept"))
    for body in ({"tools": "no", "messages": 3}, {"tools": [{"function": 1}], "messages": [1]}):
        assert text_of(data_lines(post(model, OPENCODE, {**body, "stream": True}))) == "ok"
    for contents in ("x", [1, {"parts": "y"}]):
        chunks = data_lines(post(model, GEMINI_TURN, {"contents": contents, "tools": [{"x": 1}]}))
        assert gemini_parts(chunks) == [{"text": "ok"}]
    assert all(r.side for r in model.opencode.requests + model.gemini.requests)


def test_env_points_opencode_gemini_and_qwen_here_from_the_isolated_home(
    model: FakeModel, tmp_path: Path
) -> None:
    base = {"PATH": "/bin", "GOOGLE_API_KEY": "real", "XDG_DATA_HOME": "/real", "OPENAI_MODEL": "x"}
    env = model.env(tmp_path / "home", base=base)

    opencode = json.loads((tmp_path / "home/.config/opencode/opencode.json").read_text())
    (provider,) = opencode["provider"].values()
    assert provider["options"]["baseURL"] == f"{model.url}/opencode/v1"
    assert opencode["model"] == opencode["small_model"]
    assert opencode["autoupdate"] is False
    gemini = json.loads((tmp_path / "home/.gemini/settings.json").read_text())
    assert gemini["security"]["auth"]["selectedType"] == "gemini-api-key"
    qwen = json.loads((tmp_path / "home/.qwen/settings.json").read_text())
    assert qwen["security"]["auth"]["selectedType"] == "openai"
    assert env["GOOGLE_GEMINI_BASE_URL"] == model.url
    assert env["OPENAI_BASE_URL"] == f"{model.url}/qwen/v1"
    assert env["OPENAI_MODEL"] == "mock-model"
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    assert env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert "GOOGLE_API_KEY" not in env
    assert "XDG_DATA_HOME" not in env


@pytest.mark.parametrize(
    ("cli", "package"),
    [
        ("opencode", "opencode-ai@1.18.33"),
        ("gemini", "@google/gemini-cli@0.61.0"),
        ("qwen", "@qwen-code/qwen-code@0.24.4"),
    ],
)
def test_scripting_a_cli_that_is_not_on_path_says_how_to_install_it(
    cli: str, package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    expected = (
        f"fake_model: {cli} is not on PATH; install the pinned version with "
        f"`npm install -g {package}`"
    )
    with (
        FakeModel(on_script=require_on_path) as model,
        pytest.raises(pytest.fail.Exception) as raised,
    ):
        getattr(model, cli).script(say("never"))
    assert str(raised.value) == expected


def test_sessions_without_an_id_are_told_apart_by_their_working_directory(
    model: FakeModel,
) -> None:
    model.gemini.script(run("in a"), say("a done"))
    model.gemini.script(run("in b"), say("b done"))

    def turn(cwd: str) -> list[dict[str, Any]]:
        context = f"<session_context>\n- **Workspace Directories:**\n  - {cwd}\n"
        body = gemini_body([{"role": "user", "parts": [{"text": context}, {"text": "go"}]}])
        return gemini_parts(data_lines(post(model, GEMINI_TURN, body)))

    first_a, first_b, then_a, then_b = turn("/a"), turn("/b"), turn("/a"), turn("/b")

    assert first_a[0]["functionCall"]["args"]["command"] == "in a"
    assert first_b[0]["functionCall"]["args"]["command"] == "in b"
    assert (then_a, then_b) == ([{"text": "a done"}], [{"text": "b done"}])
    assert model.problems() == []


@pytest.mark.parametrize(
    ("cli", "path", "first"),
    [
        ("qwen", QWEN, b'"object": "chat.completion.chunk"'),
        ("gemini", GEMINI_TURN, b'"candidates"'),
    ],
)
def test_stall_sends_a_first_chunk_then_nothing_until_the_model_closes(
    cli: str, path: str, first: bytes
) -> None:
    model = FakeModel().start()
    getattr(model, cli).script(stall())
    body = gemini_body() if cli == "gemini" else {"stream": True, "tools": QWEN_TOOLS}
    response = post(model, path, body)
    assert response.status == 200
    response.fp.readline()  # the chunk's size
    assert first in response.fp.readline()
    model.close()
    with pytest.raises(http.client.IncompleteRead):
        response.read()


def test_overloaded_is_a_503_in_each_apis_words(model: FakeModel) -> None:
    model.opencode.script(at_capacity())
    model.gemini.script(at_capacity())
    chat_answer = chat(model, OPENCODE)
    gemini_answer = post(model, GEMINI_TURN, gemini_body())
    assert (chat_answer.status, gemini_answer.status) == (503, 503)
    assert json.loads(chat_answer.read())["error"]["type"] == "service_unavailable"
    assert json.loads(gemini_answer.read())["error"]["status"] == "UNAVAILABLE"


def test_an_edit_without_a_write_tool_goes_through_the_shell(
    model: FakeModel, tmp_path: Path
) -> None:
    system = {"role": "system", "content": f"<env>\n  Working directory: {tmp_path}\n</env>"}
    model.opencode.script(edit("it's.txt", "a 'quoted' text\n"))

    (call,) = calls_of(
        data_lines(
            chat(
                model,
                OPENCODE,
                tools=OPENCODE_TOOLS[:1],
                messages=[system, {"role": "user", "content": "edit"}],
            )
        )
    )

    name, arguments = call
    assert name == "bash"
    subprocess.run(["bash", "-c", arguments["command"]], check=True, timeout=30)
    assert (tmp_path / "it's.txt").read_text() == "a 'quoted' text\n"


def test_every_other_host_goes_through_the_fake_model_which_refuses_it(
    model: FakeModel, tmp_path: Path
) -> None:
    env = model.env(tmp_path / "home", base={"PATH": "/bin", "ALL_PROXY": "http://real:3128"})
    assert {env[name] for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy")} == {model.url}
    assert "ALL_PROXY" not in env
    port = int(model.url.rsplit(":", 1)[1])

    tunnel = http.client.HTTPSConnection("127.0.0.1", port, timeout=30)
    tunnel.set_tunnel("registry.npmjs.org", 443)
    with pytest.raises(OSError, match="Tunnel connection failed: 501"):
        tunnel.connect()
    tunnel.close()


def test_the_install_hints_bring_the_versions_pinned_in_clis() -> None:
    pinned = json.loads((Path(__file__).parents[2] / "clis" / "package.json").read_text())
    hinted = {NPM_PACKAGES[cli]: install_command(cli).rsplit("@", 1)[1] for cli in NPM_PACKAGES}
    assert hinted == pinned["dependencies"]


def test_a_fault_that_ends_its_script_holds_for_the_retries_of_chat_and_gemini(
    model: FakeModel,
) -> None:
    model.opencode.script(http_error(401))
    model.gemini.script(at_capacity())
    assert [chat(model, OPENCODE).status for _ in range(3)] == [401, 401, 401]
    assert [post(model, GEMINI_TURN, gemini_body()).status for _ in range(3)] == [503] * 3
    assert model.problems() == []
