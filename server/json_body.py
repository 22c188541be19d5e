"""A request's JSON, read without letting a client choose how deep the parser recurses.

Python's JSON decoder recurses once per level of nesting and answers a body nested some
thousands deep with a RecursionError, which would be the server's failure (a 500) for
the client's mistake. The depth is counted first, on the body with its strings taken
out (a regular expression, so in C), and a body deeper than `MAX_JSON_DEPTH` is refused
as malformed before it is parsed.
"""

from __future__ import annotations

import json
import re

MAX_JSON_DEPTH = 128
"""Levels of arrays and objects in one body: a request (1), its variables (2), and data
as deep as the JSON that storage keeps (64), with room."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text` (outside its strings)."""
    deepest = level = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def decode_json_request(data: str | bytes) -> dict[str, object] | list[dict[str, object]]:
    """The JSON object in `data`, or the array of objects of a batch. Anything else (not
    UTF-8, not JSON, too deep, a value that is neither) raises JSONDecodeError, which
    Strawberry answers with a 400."""
    value = _decode(data)
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value
    if not isinstance(value, dict):
        raise _malformed("the request body is not a JSON object or an array of them")
    return value


def decode_json_object(data: str | bytes) -> dict[str, object]:
    """The JSON object in `data`. Anything else (not UTF-8, not JSON, too deep, a value
    that is not an object) raises JSONDecodeError, which Strawberry answers with a 400."""
    value = _decode(data)
    if not isinstance(value, dict):
        raise _malformed("the request body is not a JSON object")
    return value


def _decode(data: str | bytes) -> object:
    if isinstance(data, bytes):
        try:
            data = data.decode()
        except UnicodeDecodeError:
            raise _malformed("the request body is not UTF-8") from None
    if depth(data) > MAX_JSON_DEPTH:
        raise _malformed(f"the JSON is nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(data)


def _malformed(reason: str) -> json.JSONDecodeError:
    return json.JSONDecodeError(reason, "", 0)
