"""One OpenTelemetry span per GraphQL operation, and none per field.

Strawberry's own OpenTelemetry extension wraps every resolver in a span of its own, which
makes a page of runs with their tool calls several times slower; this one opens a single
span around the operation (its name and type, and whether it failed; never its document
or variables), under which the database's and Mastra's spans nest. A subscription gets
none: it lives as long as its connection, and its pages are evaluated for many callers
at once (resolvers/live_pages.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError, OperationType, get_operation_ast
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from strawberry.extensions import SchemaExtension

from suspended_runs.schema.query_cache import QueryCache

OPERATION_NAME, OPERATION_TYPE = "graphql.operation.name", "graphql.operation.type"


class OperationSpans(SchemaExtension):
    def __init__(self, tracer: Tracer, cache: QueryCache, max_tokens: int) -> None:
        self.tracer, self.cache, self.max_tokens = tracer, cache, max_tokens

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        kind, name = self._operation(context.query, context.operation_name)
        if kind is OperationType.SUBSCRIPTION:
            yield
            return
        type_name = kind.value if kind else "query"
        span_name = f"{type_name} {name}" if name else type_name
        with self.tracer.start_as_current_span(span_name, kind=SpanKind.SERVER) as span:
            span.set_attribute(OPERATION_TYPE, type_name)
            if name:
                span.set_attribute(OPERATION_NAME, name)
            yield
            errors = context.pre_execution_errors or getattr(context.result, "errors", None)
            if errors:
                span.set_status(Status(StatusCode.ERROR, "the operation answered errors"))

    def _operation(
        self, query: str | None, operation_name: str | None
    ) -> tuple[OperationType | None, str | None]:
        """The operation's type and name, from the document the request cache already
        holds (parsed before this runs, or right after: the same entry)."""
        try:
            document = self.cache.document(query or "", self.max_tokens)
        except GraphQLError:
            return None, operation_name
        operation = get_operation_ast(document, operation_name)
        if operation is None:
            return None, operation_name
        return operation.operation, operation.name.value if operation.name else operation_name
