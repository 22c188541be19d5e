"""The fields discovery reads of a snapshot, validated: what has the wrong type is named,
and becomes null (or JSON-safe), so a stored document can never break a list.

A writer other than Mastra (or a bug) can put any type anywhere. Structural fields (the
run id, the agent id, the dates) that cannot be read leave the document out
(`MalformedSnapshot`, in extraction.py); every other field read here is checked by a
pydantic model of exactly what is read, and a wrong one is recorded in the run's
`problems` and read as null.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Annotated, Any

from bson import Decimal128, ObjectId, Regex
from pydantic import (
    BaseModel,
    ConfigDict,
    Strict,
    ValidationError,
    ValidationInfo,
    WrapValidator,
)
from pydantic.alias_generators import to_camel

from suspended_runs.storage.types import json_kind

MOST_DEPTH = 64
"""JSON values nested deeper than this are read as null: serializing them would recurse
past what a response may."""


def _or_null(value: Any, handler: Any, info: ValidationInfo) -> Any:
    """The field as validated, or null with a problem named for it."""
    try:
        return handler(value)
    except ValidationError:
        context = info.context if isinstance(info.context, dict) else {}
        problems = context.get("problems")
        if problems is not None:
            where = context.get("where", "")
            problems.append(
                f"{where}{to_camel(info.field_name or '')}: {json_kind(value)}, not a string"
            )
        return None


Text = Annotated[str | None, Strict(), WrapValidator(_or_null)]
"""A string, or null: any other type is a problem, read as null."""


class _Fields(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, alias_generator=to_camel)


class CallFields(_Fields):
    """What is read of a pending call (an approval's `requireToolApproval`, a durable
    approval, a `suspend()` payload, or a Python run's call)."""

    tool_call_id: Text = None
    tool_name: Text = None


class ScopeFields(_Fields):
    """What scopes a run: its thread and its resource."""

    thread_id: Text = None
    resource_id: Text = None


def read_call(raw: Any, where: str, problems: list[str]) -> CallFields:
    """The call fields of `raw` (a dict); `where` names it in a problem ("toolCalls[0].")."""
    return CallFields.model_validate(raw, context={"problems": problems, "where": where})


def read_scope(raw: dict[str, Any], problems: list[str], where: str = "") -> ScopeFields:
    return ScopeFields.model_validate(raw, context={"problems": problems, "where": where})


def json_safe(value: Any, where: str, problems: list[str]) -> Any:
    """`value` as JSON can carry it: BSON's own types as their usual JSON form (a date
    as ISO 8601, an ObjectId as its hex, bytes as base64), a float that JSON cannot hold,
    a key that is not a string, or nesting past `MOST_DEPTH` as null with a problem."""
    try:
        return _safe(value, 0)
    except ValueError as exc:  # raised by _safe alone: what JSON cannot carry
        problems.append(f"{where}: {exc}, read as null")
        return None


def _safe(value: Any, depth: int) -> Any:
    if depth > MOST_DEPTH:
        raise ValueError(f"nested deeper than {MOST_DEPTH}")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a number JSON cannot hold")
        return value
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("an object with keys that are not strings")
        return {key: _safe(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(item, depth + 1) for item in value]
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()
    if isinstance(value, (ObjectId, uuid.UUID, Decimal, Decimal128)):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Regex):
        return value.pattern
    raise ValueError(f"a {type(value).__name__}, which JSON cannot carry")
