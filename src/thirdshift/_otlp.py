"""OpenTelemetry's SDK set up for a whole process, exporting over OTLP/HTTP: what ``thirdshift
worker --otel`` does before it connects (an application that runs sessions itself sets up its
own providers, as it would for any instrumented library; see ``docs/telemetry.md``).

Everything is configured by the SDK's standard variables, read by the SDK itself: where to
(``OTEL_EXPORTER_OTLP_ENDPOINT``, default ``http://localhost:4318``, or per signal
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``…_METRICS_ENDPOINT``), with which headers
(``OTEL_EXPORTER_OTLP_HEADERS``, an API key say), how often (``OTEL_BSP_SCHEDULE_DELAY``,
``OTEL_METRIC_EXPORT_INTERVAL``), and the resource (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``; the service is ``thirdshift-worker`` unless they name one).
"""

from __future__ import annotations

import os
from collections.abc import Callable

SERVICE = "thirdshift-worker"


def exporting(service: str = SERVICE) -> Callable[[], None]:
    """Set this process's tracer and meter providers to export over OTLP/HTTP; returns what
    flushes and shuts them down (call it before the process ends, or the last spans are lost).
    An ``ImportError`` where the extra ``thirdshift[otel]`` is not installed."""
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = "OTEL_SERVICE_NAME" in os.environ or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    resource = Resource.create({} if named else {"service.name": service})
    tracing = TracerProvider(resource=resource)
    tracing.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    metered = MeterProvider(
        resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
    )
    trace.set_tracer_provider(tracing)
    metrics.set_meter_provider(metered)

    def shutdown() -> None:
        tracing.shutdown()  # each flushes what it holds first
        metered.shutdown()

    return shutdown
