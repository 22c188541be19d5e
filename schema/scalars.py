"""The `DateTime` and `JSON` scalars, exact in both directions.

Dates leave as ISO 8601 in UTC with a `Z` (milliseconds, as BSON stores them, and as
Mastra prints them); any ISO 8601 date-time with an offset comes in. JSON values from
storage may hold BSON types (dates, ObjectIds): they leave as strings.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from bson import Binary, Decimal128, ObjectId
from strawberry.scalars import JSON
from strawberry.types.scalar import ScalarDefinition, scalar


def serialize_datetime(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # storage dates are UTC
    value = value.astimezone(UTC)
    spec = "milliseconds" if value.microsecond % 1000 == 0 else "microseconds"
    return value.isoformat(timespec=spec).replace("+00:00", "Z")


def parse_datetime(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError("DateTime must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"DateTime is not ISO 8601: {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError("DateTime needs a time zone, e.g. 2026-11-30T06:54:00.816Z")
    return parsed.astimezone(UTC)


def json_value(value: Any) -> Any:
    """A value of the JSON data model, for any value PyMongo returns."""
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, datetime):
        return serialize_datetime(value)
    if isinstance(value, ObjectId | Decimal128):
        return str(value)
    if isinstance(value, Binary | bytes):
        return base64.b64encode(bytes(value)).decode()
    return value


DATETIME = scalar(
    name="DateTime",
    description=(
        "An ISO 8601 date-time with a time zone; returned in UTC, e.g. 2026-11-30T06:54:00.816Z."
    ),
    serialize=serialize_datetime,
    parse_value=parse_datetime,
)

JSON_SCALAR = scalar(
    name="JSON",
    description="Any JSON value: an object, array, string, number, boolean or null.",
    specified_by_url="https://ecma-international.org/publications-and-standards/standards/ecma-404/",
    serialize=json_value,
    parse_value=lambda value: value,
)

SCALAR_MAP: dict[object, ScalarDefinition] = {datetime: DATETIME, JSON: JSON_SCALAR}
