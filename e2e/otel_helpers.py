"""OpenTelemetry's SDK in a test process: one tracer and one meter provider, set once (the API
lets a process set each only once), exporting to memory.

Setting them turns tracing on for every later session of the process, as it does in an
application: the tests that use them say so by taking the ``otel`` fixture, which empties the
finished spans first. Metrics add up over the process, so a test reads only the points of its
own model (``model=`` unique to it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass(frozen=True)
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        """The spans finished since the test began, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> ReadableSpan:
        (found,) = [span for span in self.spans() if span.name == name]
        return found

    def points(self, metric: str, **labels: Any) -> list[tuple[Mapping[str, Any], Any]]:
        """Each data point of ``metric`` whose attributes hold ``labels``, with its attributes."""
        data = self.reader.get_metrics_data()
        found: list[tuple[Mapping[str, Any], Any]] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for each in scope.metrics:
                    if each.name != metric:
                        continue
                    for point in each.data.data_points:
                        attributes = dict(point.attributes or {})
                        if all(attributes.get(k) == v for k, v in labels.items()):
                            found.append((attributes, point))
        return found


_made: list[Otel] = []


def installed() -> Otel:
    """The process's providers, set the first time."""
    if not _made:
        exporter = InMemorySpanExporter()
        tracing = TracerProvider()
        tracing.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(tracing)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _made.append(Otel(exporter, reader))
    return _made[0]


@pytest.fixture
def otel() -> Iterator[Otel]:
    made = installed()
    made.exporter.clear()
    yield made
    made.exporter.clear()
