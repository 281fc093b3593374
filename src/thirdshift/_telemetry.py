"""Sessions as OpenTelemetry spans and metrics, in the GenAI semantic conventions.

What a factory's backend (Honeycomb, Grafana, Datadog) sees of its sessions, where the
application set OpenTelemetry's providers, as every instrumented library leaves it to do
(``pip install 'thirdshift[otel]'``; ``thirdshift worker --otel`` sets them up itself). Where
it set none, or the package is absent, everything here does nothing, and costs nothing: a
provider can only have been set by a program that imported ``opentelemetry.trace`` (or
``.metrics``), so nothing is imported before one did.

- Each session call is one span, ``invoke_agent {harness}`` (:func:`session`, called by the
  machine adapter), a child of whatever span is current: the ``within`` block's
  (:func:`block`, ``invoke_workflow {name}``, called by the wiring), itself a child of the
  application's, or of a fleet activity's. A Resume's span is linked to the span of the call
  it continues, where this process ran it.
- Each tool call the stream shows is an ``execute_tool {name}`` child, where the Harness's
  reader reports them (:class:`~thirdshift.harness.ToolCalls`).
- The CLI gets its session span as ``TRACEPARENT`` (and ``TRACESTATE``), so that a CLI that
  traces nests its spans under it.
- Metrics: ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` as the
  conventions define them, and ``thirdshift.sessions`` (by outcome) and ``thirdshift.cost``.

The conventions followed are those of semantic-conventions v1.41.1 (Development status; see
``docs/telemetry.md``). ``OTEL_SEMCONV_STABILITY_OPT_IN`` with ``gen_ai_latest_experimental``
leaves out what they replaced and other instrumentations still emit by default (v1.36.0's
``gen_ai.system``). The rules (:mod:`thirdshift._sessions`) never call this module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from thirdshift._values import Ended, Usage
from thirdshift._version import __version__
from thirdshift.errors import Interrupted

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram
    from opentelemetry.trace import Span, SpanContext, Tracer

    from thirdshift.harness._base import Choice, ToolState

SEMCONV_VERSION = "1.41.1"
"""The version of OpenTelemetry's semantic conventions followed."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
SCOPE = "thirdshift"
"""The instrumentation scope's name (its version is thirdshift's)."""
OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST = "gen_ai_latest_experimental"

# As the conventions advise for gen_ai.client.token.usage.
TOKEN_BUCKETS = tuple(4.0**power for power in range(14))
# The conventions' boundaries for gen_ai.client.operation.duration stop at 81.92 s, fit for one
# model request; a session lasts minutes to hours, so the same doubling goes on to 2.9 hours.
DURATION_BUCKETS = tuple(0.01 * 2.0**power for power in range(21))

MAX_NAME = 128  # a tool's name from the stream, as far as a span name carries it
MAX_OPEN_TOOLS = 1024  # tool calls left open by a hostile stream are not kept past this
MAX_LINKED = 1024  # the CLI sessions whose last call a later Resume can link to


def _latest() -> bool:
    """Whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` asks for the latest GenAI conventions only."""
    return LATEST in {part.strip() for part in os.environ.get(OPT_IN, "").split(",")}


def _tracer() -> Tracer | None:
    """The tracer of the provider the application set; None where it set none."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        return None
    return provider.get_tracer(SCOPE, __version__, schema_url=SCHEMA_URL)


@dataclass(frozen=True)
class _Instruments:
    tokens: Histogram
    duration: Histogram
    sessions: Counter
    cost: Counter


_instruments_lock = threading.Lock()
_instruments_made: dict[int, tuple[object, _Instruments]] = {}  # the provider's, by its id


def _instruments() -> _Instruments | None:
    """The instruments on the meter provider the application set (made once per provider);
    None where nothing imported ``opentelemetry.metrics``. Until a provider is set, the API's
    own stand-in records nothing, and hands on to the provider once one is."""
    if "opentelemetry.metrics" not in sys.modules:
        return None
    from opentelemetry import metrics

    provider = metrics.get_meter_provider()
    with _instruments_lock:
        known = _instruments_made.get(id(provider))
        if known is not None and known[0] is provider:
            return known[1]
        meter = provider.get_meter(SCOPE, __version__, schema_url=SCHEMA_URL)
        made = _Instruments(
            tokens=meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
            ),
            duration=meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            ),
            sessions=meter.create_counter(
                "thirdshift.sessions",
                unit="{session}",
                description="Session calls run, by outcome.",
            ),
            cost=meter.create_counter(
                "thirdshift.cost",
                unit="{USD}",
                description="What the session calls cost, as their CLIs said.",
            ),
        )
        _instruments_made.clear()  # a provider set since: the one before is done with
        _instruments_made[id(provider)] = (provider, made)
        return made


# The span of each CLI session's last call, by its id: what a Resume of it links to.
_calls_lock = threading.Lock()
_last_calls: OrderedDict[str, SpanContext] = OrderedDict()


def _remember(session_id: str, context: SpanContext) -> None:
    with _calls_lock:
        _last_calls[session_id] = context
        _last_calls.move_to_end(session_id)
        while len(_last_calls) > MAX_LINKED:
            _last_calls.popitem(last=False)


def _last_call(session_id: str) -> SpanContext | None:
    with _calls_lock:
        return _last_calls.get(session_id)


def outcome(ended: Ended | None, error: BaseException | None) -> str:
    """How a session call ended, in a word: ``ended``, ``work_killed`` (it ended, and
    background work was killed with it), ``interrupted`` or ``failed``."""
    if error is None:
        return "work_killed" if ended is not None and ended.killed else "ended"
    if isinstance(error, Interrupted | KeyboardInterrupt):
        return "interrupted"
    return "failed"


def _usage_attributes(usage: Usage | None) -> dict[str, Any]:
    if usage is None:
        return {}
    said: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        # Counted in the input tokens too, as the conventions say it should be.
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "thirdshift.cost_usd": usage.cost_usd,
        "thirdshift.turns": usage.turns,
        "thirdshift.billing": usage.billing,
        "thirdshift.subagents": usage.subagents,
    }
    if usage.models:
        said["gen_ai.response.model"] = usage.models[0]  # the session's own; then its others
        said["thirdshift.models"] = list(usage.models)
    return {name: value for name, value in said.items() if value is not None}


class SessionCall:
    """One session call as the telemetry sees it: its span (None where nothing traces), what
    the CLI is told of it, the tool calls its reader reports, and its metrics at the end."""

    def __init__(self, span: Span | None, tracer: Tracer | None, labels: dict[str, Any]) -> None:
        self._span = span
        self._labels = labels  # what the metrics are recorded by
        self._started = time.monotonic()
        self._done = False
        self.tools: _ToolSpans | None = (
            _ToolSpans(tracer, span)
            if span is not None and tracer is not None and span.is_recording()
            else None
        )
        """Where the reader tells of tool calls (None: nothing records them, so it is not
        told, and reads no more than it needs)."""

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the session span as ``TRACEPARENT`` (and its ``TRACESTATE``, else none),
        or as it was where nothing traces."""
        span = self._span
        if span is None or not span.get_span_context().is_valid:
            return dict(env)
        from opentelemetry.trace import set_span_in_context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, set_span_in_context(span))
        told = {k: v for k, v in env.items() if k not in ("TRACEPARENT", "TRACESTATE")}
        told.update((name.upper(), value) for name, value in carrier.items())
        return told

    def ended(self, ended: Ended) -> Ended:
        """Record that the call ended with ``ended``; returns it."""
        self._end(ended, None)
        return ended

    def failed(self, error: BaseException) -> None:
        """Record that the call raised ``error`` (a failure, an interrupt, or any error)."""
        self._end(None, error)

    def _end(self, ended: Ended | None, error: BaseException | None) -> None:
        if self._done:
            return
        self._done = True
        seconds = time.monotonic() - self._started
        usage = ended.usage if ended is not None else getattr(error, "usage", None)
        usage = usage if isinstance(usage, Usage) else None
        session_id = ended.session_id if ended is not None else getattr(error, "session_id", None)
        error_type = None if error is None else type(error).__name__
        if self.tools is not None:
            self.tools.close()
        span = self._span
        if span is not None:
            _end_span(
                span,
                ended=ended,
                error=error,
                usage=usage,
                session_id=session_id,
                error_type=error_type,
            )
        _record(self._labels, seconds, usage, outcome(ended, error), error_type)


def _end_span(
    span: Span,
    *,
    ended: Ended | None,
    error: BaseException | None,
    usage: Usage | None,
    session_id: object,
    error_type: str | None,
) -> None:
    from opentelemetry.trace import Status, StatusCode

    said: dict[str, Any] = _usage_attributes(usage)
    if isinstance(session_id, str) and session_id:
        said["gen_ai.conversation.id"] = session_id
        _remember(session_id, span.get_span_context())
    containment = ended.containment if ended is not None else getattr(error, "containment", None)
    if isinstance(containment, str):
        said["thirdshift.containment"] = containment  # the one that held it, where one did
    if ended is not None and ended.killed:
        said["thirdshift.work_killed"] = len(ended.killed)
    said["thirdshift.outcome"] = outcome(ended, error)
    if error_type is not None:
        said["error.type"] = error_type
        span.set_status(Status(StatusCode.ERROR, error_type))
    span.set_attributes(said)
    span.end()


def _record(
    labels: dict[str, Any],
    seconds: float,
    usage: Usage | None,
    how: str,
    error_type: str | None,
) -> None:
    instruments = _instruments()
    if instruments is None:
        return
    model = usage.models[0] if usage is not None and usage.models else None
    by = dict(labels)
    if model is not None:
        by["gen_ai.response.model"] = model
    timed = {**by, "error.type": error_type} if error_type is not None else by
    instruments.duration.record(seconds, timed)
    counted = {name: value for name, value in timed.items() if name != "gen_ai.operation.name"}
    instruments.sessions.add(1, {**counted, "thirdshift.outcome": how})
    if usage is None:
        return
    for kind, tokens in (("input", usage.input_tokens), ("output", usage.output_tokens)):
        if tokens is not None:
            instruments.tokens.record(tokens, {**by, "gen_ai.token.type": kind})
    if usage.cost_usd is not None:
        priced = {name: value for name, value in counted.items() if name != "error.type"}
        instruments.cost.add(usage.cost_usd, priced)


@contextlib.contextmanager
def session(
    choice: Choice, kind: str, resume: str | None, containment: str
) -> Iterator[SessionCall]:
    """One session call of ``choice`` (labelled ``kind``, continuing ``resume``) as telemetry:
    its span and its metrics. The block calls :meth:`SessionCall.ended` with what it returns;
    an error it raises is recorded as it passes."""
    harness = choice.harness
    provider = harness.genai_provider(choice)
    latest = _latest()
    labels: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": provider,
        "gen_ai.agent.name": harness.name,
    }
    if not latest:
        labels["gen_ai.system"] = provider  # v1.36.0's name for it
    if choice.model:
        labels["gen_ai.request.model"] = choice.model
    tracer = _tracer()
    span: Span | None = None
    if tracer is not None:
        from opentelemetry.trace import Link, SpanKind

        attributes = {
            **labels,
            "thirdshift.kind": kind,
            "thirdshift.containment": containment,
            "thirdshift.sandbox": choice.sandbox is not None,
        }
        links = []
        if resume is not None:
            attributes["gen_ai.conversation.id"] = resume
            continued = _last_call(resume)
            if continued is not None:
                links.append(Link(continued, {"thirdshift.link": "continues"}))
        # Internal: the agent runs on this machine, under this process (the CLI is its own
        # process, told of this span through TRACEPARENT).
        span = tracer.start_span(
            f"invoke_agent {harness.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        )
    call = SessionCall(span, tracer, labels)
    try:
        yield call
    except BaseException as error:
        call.failed(error)
        raise


@contextlib.contextmanager
def block(name: str) -> Iterator[None]:
    """The span of one ``within`` block (``invoke_workflow {name}``, ``name`` the run's), current
    while it runs, so that its sessions' spans are its children; the error that ends it, if
    any, recorded. Nothing where nothing traces."""
    tracer = _tracer()
    if tracer is None:
        yield
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode, use_span

    span = tracer.start_span(
        f"invoke_workflow {name}",
        kind=SpanKind.INTERNAL,
        attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": name},
        record_exception=False,
        set_status_on_exception=False,
    )
    with use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        try:
            yield
        except BaseException as error:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            raise


class _ToolSpans:
    """The tool calls of one session call as spans, its children, timed as their lines came
    (a :class:`~thirdshift.harness.ToolCalls`). Those still open when the call ends end
    with it."""

    def __init__(self, tracer: Tracer, parent: Span) -> None:
        from opentelemetry.trace import set_span_in_context

        self._tracer = tracer
        self._parent = set_span_in_context(parent)
        self._open: dict[str, Span] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def saw(self, call_id: str, name: str, state: ToolState) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        with self._lock:
            span = self._open.pop(call_id, None)
            if span is None:
                if call_id in self._ended or not name or len(self._open) >= MAX_OPEN_TOOLS:
                    return
                name = name[:MAX_NAME]
                span = self._tracer.start_span(
                    f"execute_tool {name}",
                    context=self._parent,
                    kind=SpanKind.INTERNAL,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call_id,
                    },
                    record_exception=False,
                    set_status_on_exception=False,
                )
            if state == "started":
                self._open[call_id] = span
                return
            self._ended[call_id] = None
            if len(self._ended) > MAX_OPEN_TOOLS:
                self._ended.popitem(last=False)
        if state == "failed":
            # The stream says only that it failed: the conventions' fallback class.
            span.set_attribute("error.type", "_OTHER")
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def close(self) -> None:
        """End the calls still open: with the session (the stream never said they ended)."""
        with self._lock:
            still, self._open = list(self._open.values()), {}
        for span in still:
            span.set_attribute("thirdshift.ended_with_session", True)
            span.end()
