"""Notes on runs (storage/notes.py): kept as written, read last first per run, deleted once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from suspended_runs.storage.notes import NoteStore
from suspended_runs.storage.types import NOTES_COLLECTION


@pytest.fixture
async def notes(db) -> NoteStore:
    store = NoteStore(db[NOTES_COLLECTION], timedelta(days=7))
    await store.ensure_indexes()
    return store


async def test_a_run_s_last_notes_are_read_oldest_first(notes: NoteStore) -> None:
    start = datetime.now(UTC).replace(microsecond=0)
    for i in range(5):
        await notes.add(
            "r-1", f"note {i}", "key:alice", "person:alice", start + timedelta(seconds=i)
        )
    await notes.add("r-2", "<script>alert(1)</script>\n\tok", "key:bob", "person:bob", start)
    found = await notes.last_of(["r-1", "r-2", "r-3"], 3)
    assert [n.body for n in found["r-1"]] == ["note 2", "note 3", "note 4"]
    assert [n.body for n in found["r-2"]] == ["<script>alert(1)</script>\n\tok"]  # as written
    assert "r-3" not in found


async def test_a_note_is_deleted_once(notes: NoteStore) -> None:
    note = await notes.add("r-1", "hello", "key:alice", "person:alice", datetime.now(UTC))
    assert await notes.get(note.note_id) == note
    deleted = await asyncio.gather(*(notes.delete(note) for _ in range(5)))
    assert sorted(deleted) == [False] * 4 + [True]
    assert await notes.get(note.note_id) is None


@pytest.mark.parametrize("note_id", ["", "nope", "0" * 23, "z" * 24])
async def test_an_id_this_server_never_gave_is_no_note(notes: NoteStore, note_id: str) -> None:
    assert await notes.get(note_id) is None
