"""An OTLP/HTTP receiver on 127.0.0.1 for the tests: what an exporter sends to ``/v1/traces``
and ``/v1/metrics``, decoded from its protobuf (as a collector would), kept to be read."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclass(frozen=True)
class Received:
    """One span as it arrived."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    service: str
    links: tuple[str, ...]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(each) for each in value.array_value.values)
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


class Receiver:
    """The spans and metric names received so far; ``endpoint`` for OTEL_EXPORTER_OTLP_ENDPOINT."""

    def __init__(self, port: int) -> None:
        self.endpoint = f"http://127.0.0.1:{port}"
        self.spans: list[Received] = []
        self.metrics: set[str] = set()
        self.lock = threading.Lock()

    def took(self, path: str, body: bytes) -> bytes:
        if path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            with self.lock:
                for resource in request.resource_spans:
                    service = _attributes(resource.resource.attributes).get("service.name", "")
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            self.spans.append(
                                Received(
                                    name=span.name,
                                    trace_id=span.trace_id.hex(),
                                    span_id=span.span_id.hex(),
                                    parent_span_id=span.parent_span_id.hex(),
                                    attributes=_attributes(span.attributes),
                                    service=str(service),
                                    links=tuple(link.span_id.hex() for link in span.links),
                                )
                            )
            return ExportTraceServiceResponse().SerializeToString()
        metrics = ExportMetricsServiceRequest.FromString(body)
        with self.lock:
            for measured in metrics.resource_metrics:
                for metered in measured.scope_metrics:
                    self.metrics.update(metric.name for metric in metered.metrics)
        return ExportMetricsServiceResponse().SerializeToString()

    def named(self, prefix: str) -> list[Received]:
        with self.lock:
            return [span for span in self.spans if span.name.startswith(prefix)]


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on a free port of 127.0.0.1 while the block runs."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            answer = receiver.took(self.path, body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the test reads what arrived

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
