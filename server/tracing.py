"""OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT says where to send them.

Off by default: no provider, no instrumentation, nothing exported. On, one trace follows a
request: a span for its GraphQL operation (schema/tracing.py), a span for each MongoDB
command it sends (pymongo's instrumentation, which records no document), and a span for
each call to a Mastra server, with the W3C `traceparent` sent along (httpx's), so Mastra's
own spans join the trace. The SDK's standard `OTEL_*` settings apply (service name,
resource attributes, sampler, batching, headers); the exporter is OTLP over HTTP with
protobuf, the one installed.

Work that no request started (the follower, the subscriptions' watcher, expiry) would
make a trace of every database command it sends, many a second: a database or HTTP call
with no span above it is not recorded (`RequestRooted`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.pymongo import PymongoInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    Decision,
    Sampler,
    SamplingResult,
    _get_from_env_or_default,
)
from opentelemetry.trace import Link, SpanKind, Tracer
from opentelemetry.util.types import Attributes

from suspended_runs.runtime import ConfigurationError

SERVICE = "suspended-runs"
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
INSTALLED_PROTOCOL = "http/protobuf"


class RequestRooted(Sampler):
    """The configured sampler (OTEL_TRACES_SAMPLER), except that a client span (a
    database command, an HTTP call) with no parent is dropped: only requests start traces."""

    def __init__(self, delegate: Sampler) -> None:
        self.delegate = delegate

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: trace.TraceState | None = None,
    ) -> SamplingResult:
        parent = trace.get_current_span(parent_context).get_span_context()
        if kind is SpanKind.CLIENT and not parent.is_valid:
            return SamplingResult(Decision.DROP)
        return self.delegate.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )

    def get_description(self) -> str:
        return f"RequestRooted({self.delegate.get_description()})"


def new_provider(exporter: SpanExporter | None = None) -> TracerProvider:
    """A provider whose spans go to `exporter` (None: OTLP over HTTP, configured by the
    OTEL_* environment), in batches."""
    if exporter is None:
        exporter = _otlp_exporter()
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or SERVICE})
    provider = TracerProvider(resource=resource, sampler=RequestRooted(_get_from_env_or_default()))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def instrument(provider: TracerProvider) -> Tracer:
    """MongoDB commands and HTTP calls traced into `provider` (for clients made from now
    on); the tracer of the operation spans."""
    PymongoInstrumentor().instrument(tracer_provider=provider)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    return provider.get_tracer("suspended_runs")


def uninstrument() -> None:
    PymongoInstrumentor().uninstrument()
    HTTPXClientInstrumentor().uninstrument()


def _otlp_exporter() -> SpanExporter:
    for name in PROTOCOLS:  # the traces' own setting wins over the general one
        protocol = os.environ.get(name)
        if protocol:
            if protocol != INSTALLED_PROTOCOL:
                raise ConfigurationError(
                    f"{name}={protocol}: this server exports traces as {INSTALLED_PROTOCOL} only"
                )
            break
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()
