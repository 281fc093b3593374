"""The telemetry module in-process: each session call a span and metrics in the GenAI
conventions, a Resume linked to the call it continues, the within block their parent, tool
calls their children, TRACEPARENT for the CLI; nothing at all where nothing traces."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_helpers import Otel, otel

from thirdshift import Ended, Interrupted, RateLimited, Usage, claude, codex, opencode
from thirdshift import _telemetry as telemetry
from thirdshift.harness import Choice

__all__ = ["otel"]  # the fixture, used by name

USED = Usage(
    turns=3,
    input_tokens=1200,
    output_tokens=340,
    cached_input_tokens=1000,
    cost_usd=0.25,
    models=("claude-opus-4-1", "claude-haiku-4-5"),
    billing="api",
    subagents="counted",
)


def run(choice: Choice, ended: Ended, kind: str = "implement", resume: str | None = None) -> None:
    with telemetry.session(choice, kind, resume, "cgroup") as call:
        call.ended(ended)


def test_a_session_call_is_one_invoke_agent_span_in_the_genai_conventions(otel: Otel) -> None:
    run(claude(model="opus-a"), Ended(session_id="s-1", usage=USED, containment="cgroup"))

    span = otel.span("invoke_agent claude")
    assert span.kind == SpanKind.INTERNAL
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.schema_url == "https://opentelemetry.io/schemas/1.41.1"
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.system": "anthropic",
        "gen_ai.agent.name": "claude",
        "gen_ai.request.model": "opus-a",
        "gen_ai.response.model": "claude-opus-4-1",
        "gen_ai.conversation.id": "s-1",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 340,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "thirdshift.cost_usd": 0.25,
        "thirdshift.turns": 3,
        "thirdshift.billing": "api",
        "thirdshift.subagents": "counted",
        "thirdshift.models": ("claude-opus-4-1", "claude-haiku-4-5"),
        "thirdshift.kind": "implement",
        "thirdshift.containment": "cgroup",
        "thirdshift.sandbox": False,
        "thirdshift.outcome": "ended",
    }
    assert span.status.status_code == StatusCode.UNSET


@pytest.mark.parametrize(
    ("choice", "provider"),
    [
        (codex(), "openai"),
        (opencode(model="google/gemini-2.5-pro"), "gcp.gemini"),
        (opencode(model="openrouter/qwen3"), "openrouter"),
        (opencode(), "opencode"),
    ],
    ids=["codex", "opencode-google", "opencode-other", "opencode-default"],
)
def test_the_provider_is_the_conventions_name_for_the_harness_api(
    otel: Otel, choice: Choice, provider: str
) -> None:
    run(choice, Ended(session_id=None))
    attributes = otel.span(f"invoke_agent {choice.harness.name}").attributes or {}
    assert attributes["gen_ai.provider.name"] == provider
    assert "gen_ai.request.model" not in attributes or choice.model


def test_the_latest_conventions_opted_in_leave_out_what_they_replaced(
    otel: Otel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    run(claude(model="opus-latest"), Ended(session_id="s-2", usage=USED))

    attributes = otel.span("invoke_agent claude").attributes or {}
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert "gen_ai.system" not in attributes
    (point,) = otel.points(
        "gen_ai.client.operation.duration", **{"gen_ai.request.model": "opus-latest"}
    )
    assert "gen_ai.system" not in point[0]


def test_a_failed_call_names_the_failure_class_and_keeps_what_the_stream_said(
    otel: Otel,
) -> None:
    failure = RateLimited("claude exited 1: API Error: 429", session_id="s-3", usage=USED)
    with pytest.raises(RateLimited), telemetry.session(claude(), "review", None, "scan"):
        raise failure

    span = otel.span("invoke_agent claude")
    attributes = span.attributes or {}
    assert attributes["error.type"] == "RateLimited"
    assert attributes["thirdshift.outcome"] == "failed"
    assert attributes["gen_ai.conversation.id"] == "s-3"
    assert attributes["gen_ai.usage.input_tokens"] == 1200
    assert span.status.status_code == StatusCode.ERROR


def test_an_interrupted_call_and_any_other_error_are_recorded_as_they_pass(otel: Otel) -> None:
    with pytest.raises(Interrupted), telemetry.session(claude(), "a", None, "scan"):
        raise Interrupted()
    with pytest.raises(FileNotFoundError), telemetry.session(claude(), "b", None, "scan"):
        raise FileNotFoundError("claude")

    interrupted, missing = otel.spans()
    assert (interrupted.attributes or {})["thirdshift.outcome"] == "interrupted"
    assert (interrupted.attributes or {})["error.type"] == "Interrupted"
    assert (missing.attributes or {})["error.type"] == "FileNotFoundError"


def test_a_resume_is_a_span_of_its_own_linked_to_the_call_it_continues(otel: Otel) -> None:
    run(claude(), Ended(session_id="s-4", killed=("pnpm test",)), "implement")
    run(claude(), Ended(session_id="s-4"), "implement-resume", resume="s-4")
    run(claude(), Ended(session_id="s-9"), "other", resume="s-unknown")

    first, resume, other = otel.spans()
    assert (first.attributes or {})["thirdshift.outcome"] == "work_killed"
    assert (first.attributes or {})["thirdshift.work_killed"] == 1
    (link,) = resume.links
    assert first.context is not None
    assert link.context.span_id == first.context.span_id
    assert (resume.attributes or {})["gen_ai.conversation.id"] == "s-4"
    assert resume.context is not None
    assert resume.context.span_id != first.context.span_id
    assert other.links == ()  # a session this process never ran: nothing to link to


def test_the_cli_is_told_its_session_span_in_traceparent(otel: Otel) -> None:
    stale = {"TRACEPARENT": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "TRACESTATE": "x=1"}
    with telemetry.session(claude(), "implement", None, "scan") as call:
        env = call.environment({"HOME": "/h", **stale})
        call.ended(Ended(session_id=None))

    context = otel.span("invoke_agent claude").context
    assert context is not None
    assert env == {
        "HOME": "/h",
        "TRACEPARENT": f"00-{context.trace_id:032x}-{context.span_id:016x}-"
        f"{int(context.trace_flags):02x}",
    }


def test_tool_calls_are_execute_tool_children_ended_with_the_session_at_the_latest(
    otel: Otel,
) -> None:
    with telemetry.session(claude(), "implement", None, "scan") as call:
        tools = call.tools
        assert tools is not None
        tools.saw("t1", "Bash", "started")
        tools.saw("t1", "Bash", "started")  # said again: the same call
        tools.saw("t2", "Read", "started")
        tools.saw("t1", "", "ended")
        tools.saw("t1", "", "failed")  # once ended, it stays so
        tools.saw("t3", "", "ended")  # never said to start, and no name: nothing to show
        tools.saw("t4", "apply_patch", "failed")  # ended as it was first seen
        tools.saw("t5", "Bash", "started")
        call.ended(Ended(session_id=None))

    session = otel.span("invoke_agent claude")
    tools_seen = [span for span in otel.spans() if span.name.startswith("execute_tool ")]
    assert [(span.name, (span.attributes or {})["gen_ai.tool.call.id"]) for span in tools_seen] == [
        ("execute_tool Bash", "t1"),
        ("execute_tool apply_patch", "t4"),
        ("execute_tool Read", "t2"),
        ("execute_tool Bash", "t5"),
    ]
    assert session.context is not None
    for span in tools_seen:
        assert span.parent is not None
        assert span.parent.span_id == session.context.span_id
        assert (span.attributes or {})["gen_ai.operation.name"] == "execute_tool"
    failed = tools_seen[1]
    assert (failed.attributes or {})["error.type"] == "_OTHER"
    assert failed.status.status_code == StatusCode.ERROR
    assert (tools_seen[2].attributes or {})["thirdshift.ended_with_session"] is True


def test_the_within_block_is_the_parent_span_and_says_the_error_that_ended_it(
    otel: Otel,
) -> None:
    with pytest.raises(ValueError, match="later step"), telemetry.block("repo"):
        run(claude(), Ended(session_id=None))
        raise ValueError("later step")

    session, block = otel.spans()
    assert block.name == "invoke_workflow repo"
    assert dict(block.attributes or {}) == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "repo",
        "error.type": "ValueError",
    }
    assert block.context is not None
    assert session.parent is not None
    assert session.parent.span_id == block.context.span_id


def test_metrics_count_tokens_durations_sessions_by_outcome_and_cost(otel: Otel) -> None:
    model = "opus-metrics"
    run(claude(model=model), Ended(session_id="m1", usage=USED))
    run(claude(model=model), Ended(session_id="m2", usage=USED, killed=("make",)))
    with pytest.raises(RateLimited), telemetry.session(claude(model=model), "x", None, "scan"):
        raise RateLimited("429", usage=Usage(input_tokens=10, output_tokens=1))

    by_model = {"gen_ai.request.model": model}
    tokens = {
        (attributes["gen_ai.token.type"], attributes.get("gen_ai.response.model")): (
            point.count,
            point.sum,
        )
        for attributes, point in otel.points("gen_ai.client.token.usage", **by_model)
    }
    assert tokens == {
        ("input", "claude-opus-4-1"): (2, 2400),
        ("output", "claude-opus-4-1"): (2, 680),
        ("input", None): (1, 10),
        ("output", None): (1, 1),
    }
    durations = {
        attributes.get("error.type"): point.count
        for attributes, point in otel.points("gen_ai.client.operation.duration", **by_model)
    }
    assert durations == {None: 2, "RateLimited": 1}
    sessions = {
        attributes["thirdshift.outcome"]: point.value
        for attributes, point in otel.points("thirdshift.sessions", **by_model)
    }
    assert sessions == {"ended": 1, "work_killed": 1, "failed": 1}
    ((attributes, cost),) = otel.points("thirdshift.cost", **by_model)
    assert cost.value == pytest.approx(0.5)
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.response.model"] == "claude-opus-4-1"
