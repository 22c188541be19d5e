"""A request's JSON, read without letting a client choose how deep the parser recurses,
and with no text in it that the server cannot write.

Python's JSON decoder recurses once per level of nesting and answers a body nested some
thousands deep with a RecursionError, which would be the server's failure (a 500) for
the client's mistake. The depth is counted first, on the body with its strings taken
out (a regular expression, so in C), and a body deeper than `MAX_JSON_DEPTH` is refused
as malformed before it is parsed.

JSON may spell a lone surrogate (`"\\ud800"`): valid JSON, but no Unicode character, so
no UTF-8 encoder (MongoDB's driver, a JSON answer, a log line) can write it, and it would
fail wherever it went, as the server's error. Every string of a request (keys and values,
the query's text too) is checked here, at the edge, for both the HTTP body and WebSocket
messages: the view decodes both with `decode_json_request`.
"""

from __future__ import annotations

import json
import re
from json import JSONDecodeError

MAX_JSON_DEPTH = 128
"""Levels of arrays and objects in one body: a request (1), its variables (2), and data
as deep as the JSON that storage keeps (64), with room."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
"""Where a surrogate can come from: JSON's escape of one, or text given as a str (bytes
that decode as UTF-8 hold none)."""


class RefusedJSON(JSONDecodeError):
    """JSON this server does not take: its message is the answer (a 400, `BAD_REQUEST`;
    over WebSocket a 4400 close). Strawberry reads it as the JSONDecodeError it is."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "", 0)


def depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text` (outside its strings)."""
    deepest = level = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def decode_json_request(data: str | bytes) -> dict[str, object] | list[dict[str, object]]:
    """The JSON object in `data`, or the array of objects of a batch. Anything else raises
    JSONDecodeError, answered with a 400: RefusedJSON, saying why, for what parses but
    is refused (not UTF-8, too deep, a lone surrogate, a value that is neither)."""
    value = _decode(data)
    if isinstance(value, list):
        if any(isinstance(item, list) for item in value):
            raise RefusedJSON("a batch holds operations, not arrays")
        if not all(isinstance(item, dict) for item in value):
            raise RefusedJSON("a batch holds operations (JSON objects)")
        return value
    if not isinstance(value, dict):
        raise RefusedJSON("the request body is not a JSON object or an array of them")
    return value


def decode_json_object(data: str | bytes) -> dict[str, object]:
    """The JSON object in `data`. Anything else (not UTF-8, not JSON, too deep, a lone
    surrogate, a value that is not an object) raises JSONDecodeError."""
    value = _decode(data)
    if not isinstance(value, dict):
        raise RefusedJSON("the request body is not a JSON object")
    return value


def _decode(data: str | bytes) -> object:
    if isinstance(data, bytes):
        try:
            data = data.decode()
        except UnicodeDecodeError:
            raise RefusedJSON("the request body is not UTF-8") from None
    if depth(data) > MAX_JSON_DEPTH:
        raise RefusedJSON(f"the JSON is nested deeper than {MAX_JSON_DEPTH} levels")
    value = json.loads(data)
    if _SURROGATE.search(data) and not encodable(value):
        raise RefusedJSON("a string holds a lone surrogate (\\ud800 to \\udfff): no text")
    return value


def encodable(value: object) -> bool:
    """Whether every string in `value` (a decoded JSON value, keys too) is Unicode that
    UTF-8 can encode: no lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True
