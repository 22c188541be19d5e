"""The Schema: the root types, the scalars and the protective extensions, assembled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    DisableIntrospection,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from suspended_runs.schema.mutation import Mutation
from suspended_runs.schema.query import Query
from suspended_runs.schema.scalars import SCALAR_MAP


@dataclass(frozen=True, slots=True)
class Limits:
    max_depth: int = 10
    max_tokens: int = 2000
    max_aliases: int = 30
    cache_size: int = 256


class Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Errors are logged by `schema.errors.classify` (internal ones with a trace)."""


def build_schema(limits: Limits | None = None, *, introspection: bool = True) -> Schema:
    limits = limits or Limits()
    # Factories, not instances: an extension instance is per request (no state leaks).
    extensions: list[Any] = [
        lambda: QueryDepthLimiter(max_depth=limits.max_depth),
        lambda: MaxTokensLimiter(max_token_count=limits.max_tokens),
        lambda: MaxAliasesLimiter(max_alias_count=limits.max_aliases),
        lambda: ParserCache(maxsize=limits.cache_size),
        lambda: ValidationCache(maxsize=limits.cache_size),
    ]
    if not introspection:
        extensions.append(DisableIntrospection)
    return Schema(
        query=Query,
        mutation=Mutation,
        extensions=extensions,
        config=StrawberryConfig(scalar_map=SCALAR_MAP),
    )


schema = build_schema()
"""The default schema, for `strawberry export-schema schema.schema:schema`."""
