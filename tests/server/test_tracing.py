"""Traces (server/tracing.py, schema/tracing.py): one approval of a Mastra run is one trace
of its GraphQL operation, its MongoDB commands and its call to Mastra, which receives the
trace context; and `suspended-runs serve` exports to an OTLP receiver over HTTP."""

from __future__ import annotations

import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from suspended_runs.server.embedded_mongodb import free_port
from tests.helpers import APPROVE, Server, act, eventually, has_status, make_gql, running_app
from tests.mastra_peer import MastraPeer, delete, settings_for


def spans_of(provider: TracerProvider, exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    provider.force_flush()
    return list(exporter.get_finished_spans())


async def test_one_approval_is_one_trace_with_its_database_and_mastra_spans(
    mongo_uri: str, peer: MastraPeer, traced
) -> None:
    provider, exporter = traced
    path = f"/tmp/{uuid.uuid4().hex}"
    async with running_app(settings_for(mongo_uri, peer), traces=provider) as client:
        gql = make_gql(client)
        run_id = await peer.start_run("approver", [delete(path)])
        await eventually(lambda: has_status(gql, run_id), within=5)
        spans_of(provider, exporter)
        exporter.clear()
        result = await act(gql, APPROVE, runId=run_id)
        assert result["__typename"] == "RunDecided", result
        spans = spans_of(provider, exporter)
    [operation] = [s for s in spans if s.kind is SpanKind.SERVER]
    assert operation.name == "mutation"
    assert dict(operation.attributes or {}) == {"graphql.operation.type": "mutation"}
    assert operation.context is not None
    trace_id = operation.context.trace_id
    assert {s.context.trace_id for s in spans if s.context} == {trace_id}, "one trace"
    database = [s for s in spans if (s.attributes or {}).get("db.system") == "mongodb"]
    mastra = [s for s in spans if peer.url in str(_url(s))]
    assert database and mastra, [s.name for s in spans]
    assert {s.kind for s in database + mastra} == {SpanKind.CLIENT}
    assert len(spans) == 1 + len(database) + len(mastra), "no span per field"
    sent = [tp for route, tp in peer.traceparents() if route.endswith("/approve-tool-call")]
    assert any(tp.split("-")[1] == f"{trace_id:032x}" for tp in sent), sent
    texts = [str(v) for s in spans for v in (s.attributes or {}).values()]
    assert not any("approveToolCall" in text or path in text for text in texts)


def _url(span: ReadableSpan) -> Any:
    attributes = span.attributes or {}
    return attributes.get("url.full") or attributes.get("http.url")


class Receiver:
    """An OTLP/HTTP trace receiver: keeps the spans of each export it is sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        received.extend((resource.resource, span) for span in scope.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_serve_exports_its_spans_to_an_otlp_http_receiver(server: Server) -> None:
    receiver = Receiver()
    server.env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "runs-api",
        }
    )
    server.start()
    try:
        assert "errors" not in server.query("query Pending { suspendedRuns { total } }")
        deadline = time.monotonic() + 20
        while not any(span.name == "query Pending" for _, span in receiver.spans):
            assert time.monotonic() < deadline, [span.name for _, span in receiver.spans]
            time.sleep(0.1)
    finally:
        server.stop()
        receiver.server.shutdown()
        receiver.server.server_close()
    [(resource, operation)] = [(r, s) for r, s in receiver.spans if s.name == "query Pending"]
    names = {a.key: a.value.string_value for a in resource.attributes}
    assert names["service.name"] == "runs-api"
    children = [s for _, s in receiver.spans if s.parent_span_id == operation.span_id]
    assert children and all(s.trace_id == operation.trace_id for s in children)
    assert any(s.name.endswith(".find") or s.name.endswith(".aggregate") for s in children)
