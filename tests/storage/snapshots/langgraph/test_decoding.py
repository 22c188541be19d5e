"""LangGraph's stored values are read without importing or calling what they name, and a
value this server must not or cannot read is refused by type, never guessed at."""

from __future__ import annotations

import sys

import ormsgpack
import pytest

from suspended_runs.storage.snapshots.langgraph.decoding import (
    Tagged,
    Undecodable,
    decode_pair,
    decode_typed,
    plain,
)
from tests.langgraph_documents import interrupted, typed


def test_an_extension_is_its_class_name_and_data_and_nothing_is_imported() -> None:
    blob = ormsgpack.packb(
        {"x": ormsgpack.Ext(2, ormsgpack.packb(["no_such_module.evil", "Boom", {"rm": "-rf"}]))}
    )
    value = decode_typed("msgpack", blob)
    assert value == {"x": Tagged("no_such_module.evil", "Boom", {"rm": "-rf"})}
    assert "no_such_module" not in sys.modules
    assert plain(value) == {"x": {"rm": "-rf"}}


def test_langgraphs_own_interrupt_reads_as_its_fields() -> None:
    [value] = decode_typed(*typed(interrupted({"question": "?"}, "i-1")))
    assert isinstance(value, Tagged) and value.name == "Interrupt"
    assert value.data == {"value": {"question": "?"}, "id": "i-1", "response_schema": None}


@pytest.mark.parametrize(
    ("kind", "data", "says"),
    [
        ("pickle", b"\x80\x04K\x01.", "pickled"),
        ("msgpack+aes", b"\x00" * 32, "encrypted"),
        ("msgpack", b"\x92\x01", "cannot be read"),  # truncated: an array of 2 holding 1
        ("msgpack", b"\xc1", "cannot be read"),  # a byte msgpack never uses
        ("xml", b"<a/>", "unknown"),
        ("json", b"{not json", "not JSON"),
        ("msgpack", "a string, not bytes", "not bytes"),
        (None, b"", "not a string"),
    ],
)
def test_what_is_not_read_is_refused_by_what_it_is(kind: object, data: object, says: str) -> None:
    with pytest.raises(Undecodable, match=says):
        decode_typed(kind, data)


def test_null_bytes_and_json_values_read_as_they_are() -> None:
    assert decode_typed("null", b"") is None
    assert decode_typed("bytes", b"\x00\x01") == b"\x00\x01"
    assert decode_typed("json", b'{"a": [1]}') == {"a": [1]}


def test_a_metadata_value_is_a_type_and_bytes_pair() -> None:
    assert decode_pair(list(typed("input"))) == "input"
    for bad in ("input", ["msgpack"], {"type": "msgpack"}, None):
        with pytest.raises(Undecodable):
            decode_pair(bad)
