"""What tracing costs: a session traced against not, and the reader told of tool calls.

- **session**: one session of the fake Claude that runs three commands and says one line,
  through ``Sessions.within`` and the real adapter, with OpenTelemetry's SDK exporting every
  span and metric over OTLP/HTTP (a batch processor, as ``thirdshift worker --otel`` sets it up)
  to a receiver on 127.0.0.1, against the same session where no provider is set. A process can
  set its providers only once, so "not traced" is the telemetry module finding none (what it
  finds in a program that set none: nothing imported, nothing done). In pairs whose order
  alternates: this machine's noise between identical runs is far above the difference sought,
  so only paired differences mean anything;
- **calls**: the telemetry's own work for one call, in-process, as the adapter asks it (a span,
  the CLI's environment, three tool calls, the ending and its metrics), traced against no
  provider, 500 calls a run, in pairs: the session's figure is within its noise, this one is
  not;
- **reader**: the Claude reader over the Claude captures' lines, 20 MB of them, told of tool
  calls (a listener that keeps nothing) against not: told, it parses the tool results too,
  which it otherwise skips unparsed. Interleaved the same way.

Each figure is measured in one run, against its own baseline; nothing is compared to a fixed
threshold. ``--pairs`` makes it smaller.
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from results_block import write_block  # bench/: first on sys.path when run as a script

from thirdshift import Ended, Logs, Sessions, Usage, claude
from thirdshift import _telemetry as telemetry
from thirdshift.harness import ToolState, harness_named
from thirdshift.testing.fakecli import FakeCLIs
from thirdshift.testing.steps import run, say

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TRANSCRIPTS = Path(__file__).resolve().parent.parent / "tests" / "transcripts"


class _Sink(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes everything and keeps nothing."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def exporting() -> Iterator[Callable[[bool], None]]:
    """The SDK exporting over OTLP/HTTP to a sink on 127.0.0.1; yields the switch that makes
    the telemetry module find the providers (True) or none (False)."""
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        tracing = TracerProvider()
        # A queue that holds the calls' bursts of spans (its default, 2,048, drops some).
        exporter = OTLPSpanExporter(f"{endpoint}/v1/traces")
        tracing.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=1 << 16))
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(f"{endpoint}/v1/metrics"), 1000)
        metered = MeterProvider(metric_readers=[reader])
        trace.set_tracer_provider(tracing)
        metrics.set_meter_provider(metered)
        found = (telemetry._tracer, telemetry._instruments)

        def switch(on: bool) -> None:
            telemetry._tracer = found[0] if on else lambda: None
            telemetry._instruments = found[1] if on else lambda: None

        try:
            yield switch
        finally:
            switch(True)
            tracing.shutdown()
            metered.shutdown()
            server.shutdown()


def session_seconds(fakes: FakeCLIs, folder: Path, index: int) -> float:
    fakes.claude.script(run("true"), run("true"), run("true"), say("hello"))
    began = time.perf_counter()
    with Sessions.within(
        Logs(folder / "logs", f"bench{index}"),
        folder / "worktree",
        claude(),
        progress=lambda _: None,
    ) as sessions:
        sessions.run("hello", "Say hello.")
    return time.perf_counter() - began


def sessions(pairs: int, traced: Callable[[bool], None]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="thirdshift-bench-") as name:
        folder = Path(name)
        (folder / "worktree").mkdir()
        fakes = FakeCLIs.create(folder / "fakes")
        saved = dict(os.environ)
        os.environ.update(fakes.env())
        try:
            for on in (True, False):  # warm: bytecode, the SDK's first spans
                traced(on)
                session_seconds(fakes, folder, 0)
            differences, ratios = [], []
            for index in range(pairs):
                taken = {}
                for on in (True, False) if index % 2 == 0 else (False, True):
                    traced(on)
                    taken[on] = session_seconds(fakes, folder, index)
                differences.append(taken[True] - taken[False])
                ratios.append(taken[True] / taken[False])
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return {
        "pairs": pairs,
        "median_ms": statistics.median(differences) * 1000,
        "min_ms": min(differences) * 1000,
        "max_ms": max(differences) * 1000,
        "ratio": statistics.median(ratios),
    }


def _call_seconds(calls: int) -> float:
    """``calls`` session calls of the telemetry alone, as the adapter makes them: a span, the
    CLI's environment, three tool calls, the ending and its metrics."""
    choice = claude(model="opus")
    ended = Ended(session_id="s", usage=Usage(turns=1, input_tokens=900, output_tokens=80))
    began = time.perf_counter()
    for _ in range(calls):
        with telemetry.session(choice, "implement", None, "cgroup") as call:
            call.environment({"HOME": "/home/x", "PATH": "/usr/bin"})
            if call.tools is not None:
                for tool in ("t1", "t2", "t3"):
                    call.tools.saw(tool, "Bash", "started")
                    call.tools.saw(tool, "", "ended")
            call.ended(ended)
    return time.perf_counter() - began


def calls(pairs: int, traced: Callable[[bool], None], per_run: int = 500) -> dict[str, float]:
    """The telemetry's own work per call, traced against no provider, in pairs."""
    differences = []
    for index in range(pairs):
        taken = {}
        for on in (True, False) if index % 2 == 0 else (False, True):
            traced(on)
            taken[on] = _call_seconds(per_run) / per_run
        differences.append(taken[True] - taken[False])
    return {"pairs": pairs, "median_us": statistics.median(differences) * 1e6}


class _Nobody:
    def saw(self, call_id: str, name: str, state: ToolState) -> None:
        pass


def _corpus(megabytes: int) -> list[str]:
    lines = [
        line
        for capture in sorted(TRANSCRIPTS.glob("claude-*"))
        for line in (capture / "stdout.jsonl").read_text().splitlines()
    ]
    size = sum(len(line) for line in lines)
    return lines * max(1, megabytes * 1_000_000 // size)


def _big_results(megabytes: int) -> list[str]:
    """A stream whose bytes are mostly tool output, as a real session's are: a call, then
    its result of 64 KB, over and over (the captures' results are a few bytes each)."""
    row = 'tests/test_app.py::test_case[\\"a\\"] PASSED\\t(0.01s)\\n'  # escapes, as JSON has
    output = row * (65536 // len(row))
    lines = []
    for index in range(max(1, megabytes * 1_000_000 // (len(output) + 300))):
        lines.append(
            f'{{"type":"assistant","message":{{"id":"m{index}","content":[{{"type":"tool_use",'
            f'"id":"t{index}","name":"Bash","input":{{"command":"cat log"}}}}],"usage":{{}}}}}}'
        )
        lines.append(
            f'{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t{index}",'
            f'"type":"tool_result","content":"{output}","is_error":false}}]}}}}'
        )
    return lines


def _read_seconds(lines: list[str], told: bool) -> float:
    reader = harness_named("claude").reader(Path("."))
    if told:
        reader.report_tool_calls(_Nobody())
    began = time.perf_counter()
    for line in lines:
        reader.feed(line)
    return time.perf_counter() - began


def readers(pairs: int, lines: list[str]) -> dict[str, float]:
    size = sum(len(line) + 1 for line in lines) / 1e6
    ratios = []
    for index in range(pairs):
        taken = {
            told: _read_seconds(lines, told) for told in ((True, False)[:: 1 - 2 * (index % 2)])
        }
        ratios.append(taken[True] / taken[False])
    return {"pairs": pairs, "megabytes": size, "ratio": statistics.median(ratios)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=24)
    parser.add_argument("--megabytes", type=int, default=20)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    with exporting() as traced:  # a process sets its providers once: one for everything
        session = sessions(args.pairs, traced)
        own = calls(max(3, args.pairs // 2), traced)
    reading = readers(max(3, args.pairs // 4), _corpus(args.megabytes))
    big = readers(max(3, args.pairs // 4), _big_results(args.megabytes))
    text = "\n".join(
        [
            "### Tracing: a session traced against not (bench/telemetry.py)",
            "",
            "| what | paired runs | traced minus not (median) | min / max | median ratio |",
            "| --- | --- | --- | --- | --- |",
            f"| a fake-Claude session of three commands, exported over OTLP/HTTP | "
            f"{session['pairs']} | {session['median_ms']:.1f} ms | "
            f"{session['min_ms']:.0f} / {session['max_ms']:.0f} ms | {session['ratio']:.3f} |",
            f"| the telemetry alone, per call: its span, TRACEPARENT, three tool calls, its "
            f"metrics | {own['pairs']} runs of 500 calls | {own['median_us']:.0f} µs | | |",
            f"| the Claude reader over {reading['megabytes']:.0f} MB of the captures' lines, "
            f"told of tool calls | {reading['pairs']:.0f} | | | {reading['ratio']:.3f} |",
            f"| the same over {big['megabytes']:.0f} MB of calls whose results are 64 KB each, "
            f"told of tool calls | {big['pairs']:.0f} | | | {big['ratio']:.3f} |",
            "",
            "Traced: OpenTelemetry's SDK, a batch span processor and a periodic metric reader "
            "exporting over OTLP/HTTP to a receiver on 127.0.0.1; not: no provider found. Each "
            "pair in alternating order, in one run; the reader's ratio is its time told of tool "
            "calls over its time not.",
        ]
    )
    print(text)
    if not args.no_write:
        write_block(RESULTS, "telemetry", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
