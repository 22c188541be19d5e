"""The GraphQL contract: Strawberry types, inputs and the Schema; `schema.graphql` is its SDL."""

from schema.errors import MASKED_MESSAGE, classify
from schema.schema import Limits, Schema, build_schema

__all__ = ["MASKED_MESSAGE", "Limits", "Schema", "build_schema", "classify"]
