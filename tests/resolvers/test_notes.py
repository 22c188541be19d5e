"""Notes on the real server (resolvers/notes.py): plain text beside a run, kept as
written, refused when it is not text or too long, deleted by its author or an admin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from suspended_runs.server import Settings
from suspended_runs.storage.types import NOTES_COLLECTION
from tests.helpers import Gql, act, make_gql
from tests.helpers import start_run as start

ADD = """mutation($input: AddRunNoteInput!) { addRunNote(input: $input) { __typename
  ... on Problem { message } ... on NoteAdded { note { id body author by at } } } }"""
DELETE = """mutation($input: DeleteRunNoteInput!) { deleteRunNote(input: $input) { __typename
  ... on Problem { message } } }"""
NOTES = """query($id: ID!, $last: Int!) { agentRun(runId: $id) { notes(last: $last) {
  id body author } } }"""
PAGE = """{ suspendedRuns { runs { runId notes { body } } } }"""


async def notes_of(gql: Gql, run_id: str, last: int = 20) -> list[dict[str, Any]]:
    run = (await gql(NOTES, {"id": run_id, "last": last}))["data"]["agentRun"]
    return [] if run is None else list(run["notes"])


async def test_a_note_is_kept_as_written_and_shown_as_text(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        script = "<script>alert(1)</script> asked the customer,\n\twaiting for an answer"
        added = await act(who["alice"], ADD, runId=run_id, body=script)
        assert added["__typename"] == "NoteAdded"
        note = added["note"]
        assert (note["body"], note["author"], note["by"]) == (script, "key:alice", "key:alice")
        await act(who["bob"], ADD, runId=run_id, body="second")
        assert [n["body"] for n in await notes_of(who["carol"], run_id)] == [script, "second"]
        assert [n["body"] for n in await notes_of(who["carol"], run_id, last=1)] == ["second"]
        page = (await who["carol"](PAGE))["data"]["suspendedRuns"]["runs"]
        assert page == [{"runId": run_id, "notes": [{"body": script}, {"body": "second"}]}]


async def test_a_note_that_is_not_plain_text_or_too_long_is_refused(
    reviewed: Callable[..., Any], db
) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        for body in ("x" * 1_000_000, "é" * 4097, "bell\x07", "nul\x00", "\x1b[31mred", " \n "):
            answer = await who["alice"](ADD, {"input": {"runId": run_id, "body": body}})
            assert answer["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", body[:10]
        assert await db[NOTES_COLLECTION].count_documents({}) == 0
        for last in (0, 101):
            answer = await who["alice"](NOTES, {"id": run_id, "last": last})
            assert answer["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_a_note_is_deleted_by_its_author_or_an_admin(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        ids = [(await act(who["alice"], ADD, runId=run_id, body=b))["note"]["id"] for b in "ab"]
        refused = await act(who["bob"], DELETE, noteId=ids[0])
        assert refused["__typename"] == "Forbidden"
        assert (await act(who["alice"], DELETE, noteId=ids[0]))["__typename"] == "NoteDeleted"
        assert (await act(who["alice"], DELETE, noteId=ids[0]))["__typename"] == "NoteNotFound"
        assert (await act(who["starter"], DELETE, noteId=ids[1]))["__typename"] == "NoteDeleted"
        assert await notes_of(who["bob"], run_id) == []
        for unknown in ("nope", "0" * 24):
            assert (await act(who["bob"], DELETE, noteId=unknown))["__typename"] == "NoteNotFound"
        log = """query($id: ID!) { decisionLog(runId: $id) { action } }"""
        actions = [r["action"] for r in (await who["bob"](log, {"id": run_id}))["data"]
                   ["decisionLog"]]  # fmt: skip
        assert actions == ["ADD_NOTE", "ADD_NOTE", "DELETE_NOTE", "DELETE_NOTE"]


async def test_a_note_changes_a_conditional_poll(
    settings: Settings, keys: tuple[Path, dict[str, str]], start_app: Callable[..., Any]
) -> None:
    client = await start_app(settings.model_copy(update={"api_keys_file": keys[0]}))
    who = {name: {"x-api-key": key} for name, key in keys[1].items()}
    run_id = (await start(make_gql(client, who["starter"]), "file-cleaner"))["runId"]
    polled = await client.get("/graphql", params={"query": PAGE}, headers=who["carol"])
    tagged = {**who["carol"], "if-none-match": polled.headers["etag"]}
    unchanged = await client.get("/graphql", params={"query": PAGE}, headers=tagged)
    assert unchanged.status_code == 304
    await act(make_gql(client, who["alice"]), ADD, runId=run_id, body="asked the customer")
    again = await client.get("/graphql", params={"query": PAGE}, headers=tagged)
    assert again.status_code == 200
    notes = again.json()["data"]["suspendedRuns"]["runs"][0]["notes"]
    assert notes == [{"body": "asked the customer"}]


async def test_another_tenant_s_approver_neither_writes_nor_deletes_nor_reads_notes(
    tenants: dict[str, Any],
) -> None:
    client = tenants["client"]
    mine = make_gql(client, {"x-api-key": tenants["keys"]["a-admin"]})
    other = make_gql(client, {"x-api-key": tenants["keys"]["b-approver"]})
    viewer = make_gql(client, {"x-api-key": tenants["keys"]["a-viewer"]})
    note = (await act(mine, ADD, runId="a-0", body="tenant a's"))["note"]
    assert (await act(other, ADD, runId="a-0", body="x"))["__typename"] == "RunNotFound"
    assert (await act(other, DELETE, noteId=note["id"]))["__typename"] == "NoteNotFound"
    assert await notes_of(other, "a-0") == []
    assert [n["body"] for n in await notes_of(viewer, "a-0")] == ["tenant a's"]
    assert (await act(viewer, ADD, runId="a-0", body="x"))["__typename"] == "Forbidden"
