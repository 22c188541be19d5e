"""The Schema: the root types, the scalars and the protective extensions, assembled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import strawberry
from graphql import GraphQLError
from opentelemetry.trace import Tracer
from strawberry.extensions import (
    DisableIntrospection,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from suspended_runs.schema.mutation import Mutation
from suspended_runs.schema.query import Query
from suspended_runs.schema.query_cache import DEFAULT_BYTES, CachedDocuments, QueryCache
from suspended_runs.schema.scalars import SCALAR_MAP
from suspended_runs.schema.subscription import Subscription
from suspended_runs.schema.tracing import OperationSpans


@dataclass(frozen=True, slots=True)
class Limits:
    max_depth: int = 10
    max_tokens: int = 2000
    max_aliases: int = 30
    cache_bytes: int = DEFAULT_BYTES
    cache_size: int | None = None
    """The deprecated QUERY_CACHE_SIZE: at most this many documents as well."""


class Schema(strawberry.Schema):
    query_cache: QueryCache
    max_tokens: int

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Errors are logged by `schema.errors.classify` (internal ones with a trace)."""


def build_schema(
    limits: Limits | None = None, *, introspection: bool = True, tracer: Tracer | None = None
) -> Schema:
    """`tracer`: one span per operation (schema/tracing.py); None: no tracing."""
    limits = limits or Limits()
    cache = QueryCache(limits.cache_bytes, limits.cache_size)
    # Factories, not instances: an extension instance is per request (no state leaks).
    extensions: list[Any] = [
        lambda: QueryDepthLimiter(max_depth=limits.max_depth),
        lambda: MaxTokensLimiter(max_token_count=limits.max_tokens),
        lambda: MaxAliasesLimiter(max_alias_count=limits.max_aliases),
        lambda: CachedDocuments(cache),
    ]
    if not introspection:
        extensions.append(DisableIntrospection)
    if tracer is not None:
        extensions.append(lambda: OperationSpans(tracer, cache, limits.max_tokens))
    built = Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=extensions,
        config=StrawberryConfig(scalar_map=SCALAR_MAP),
    )
    built.query_cache, built.max_tokens = cache, limits.max_tokens
    return built


schema = build_schema()
"""The default schema, for `strawberry export-schema schema.schema:schema`."""
