"""LangGraph's stored values, decoded without importing or calling anything they name.

`MongoDBSaver` stores every value as a `(type, bytes)` pair made by LangGraph's
`JsonPlusSerializer`: msgpack whose extension types name a class (`[module, class, data]`)
that the serializer imports and calls to read it back. This server reads documents other
processes write, so it never does that (docs/design.md, "LangGraph threads"): an extension
is decoded into a `Tagged` value, the class's name beside the data it was built from.
`pickle` and encrypted (`+aes`) values are never decoded: they are `Undecodable`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import ormsgpack

from suspended_runs.storage.errors import MalformedSnapshot

_KINDS_NOT_READ = ("pickle",)
"""Serialized by a language runtime: reading it runs code."""


class Undecodable(MalformedSnapshot):
    """A stored LangGraph value this server does not (or must not) read."""


@dataclass(frozen=True, slots=True)
class Tagged:
    """A msgpack extension of LangGraph's: the class it names and the data it was built
    from (keyword arguments, positional arguments, or one value), never the class."""

    module: str
    name: str
    data: Any


def decode_typed(kind: Any, data: Any) -> Any:
    """The value a `(type, bytes)` pair holds, extensions as `Tagged`. Raises Undecodable
    for a pickled or encrypted value, an unknown type, or bytes that are not what their
    type says."""
    if not isinstance(kind, str):
        raise Undecodable(f"a value's type is {type(kind).__name__}, not a string")
    if kind == "null":
        return None
    if "+" in kind or kind in _KINDS_NOT_READ:
        raise Undecodable(f"a {kind} value is not read (encrypted or pickled)")
    if not isinstance(data, bytes):
        raise Undecodable(f"a {kind} value is {type(data).__name__}, not bytes")
    if kind in ("bytes", "bytearray"):
        return data
    if kind == "json":
        try:
            return json.loads(data)
        except ValueError as exc:
            raise Undecodable(f"a json value that is not JSON: {exc}") from None
    if kind == "msgpack":
        try:
            return ormsgpack.unpackb(data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS)
        except (ormsgpack.MsgpackDecodeError, ValueError, TypeError, RecursionError) as exc:
            raise Undecodable(f"a msgpack value that cannot be read: {exc}") from None
    raise Undecodable(f"an unknown value type {kind!r}")


def decode_pair(pair: Any) -> Any:
    """A metadata value as the saver stores it: a `[type, bytes]` pair."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise Undecodable("a metadata value is not a [type, bytes] pair")
    return decode_typed(pair[0], pair[1])


def _extension(code: int, data: bytes) -> Any:
    """One extension: `[module, name, data, ...]` (a method name may follow), as Tagged."""
    inner = ormsgpack.unpackb(data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS)
    if (
        isinstance(inner, (list, tuple))
        and len(inner) >= 3
        and isinstance(inner[0], str)
        and isinstance(inner[1], str)
    ):
        return Tagged(inner[0], inner[1], inner[2])
    return Tagged("", f"extension {code}", inner)


def plain(value: Any) -> Any:
    """`value` with every `Tagged` replaced by its data, as a client may be shown it."""
    if isinstance(value, Tagged):
        return plain(value.data)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def fields_of(value: Any, name: str) -> dict[str, Any] | None:
    """The keyword data of a `Tagged` value of class `name` (an Interrupt, a message), or
    of a plain object (what a JSON writer left), else None."""
    if isinstance(value, Tagged):
        return value.data if value.name == name and isinstance(value.data, dict) else None
    return value if isinstance(value, dict) else None
