"""The GraphQL contract: Strawberry types, inputs and the Schema; `schema.graphql` is its SDL."""

from suspended_runs.schema.errors import (
    FULL,
    MASKED_MESSAGE,
    RETRY_AFTER_SECONDS,
    UNAVAILABLE,
    classify,
)
from suspended_runs.schema.schema import Limits, Schema, build_schema

__all__ = [
    "FULL",
    "MASKED_MESSAGE",
    "RETRY_AFTER_SECONDS",
    "UNAVAILABLE",
    "Limits",
    "Schema",
    "build_schema",
    "classify",
]
