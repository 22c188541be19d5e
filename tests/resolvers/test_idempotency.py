"""Idempotency keys (resolvers/idempotency.py): taken over from a dead holder, a typed
answer for a twin that waits too long, nothing kept for answers that applied nothing,
a replay shows the run as it is now; keys and audit records expire; a key kept under a
credential answers every credential of its person, and no one else, found by one query of
exact ids however many keys are kept."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from pymongo import AsyncMongoClient, monitoring
from pymongo.asynchronous.database import AsyncDatabase

from suspended_runs.resolvers import DecisionRequest
from suspended_runs.server import Settings
from suspended_runs.server.auth import API_KEY_HEADER, new_api_key
from suspended_runs.storage import Action, Document, database
from tests.builders import SECRET_SETTING, bearer, key_file, token
from tests.helpers import (
    APPROVE,
    DECLINE,
    Gql,
    act,
    eventually,
    has_status,
    make_gql,
    running_app,
    start_run,
)

SLOW = {"agents": "tests.slow_agents:agents"}


async def test_a_failure_in_the_background_shows_on_the_run_audit_and_replay(
    settings, start_app
) -> None:
    gql = make_gql(await start_app(settings.model_copy(update=SLOW)))
    run_id = (await start_run(gql, "broken", "go"))["runId"]
    first = await act(gql, APPROVE, runId=run_id, wait=False, idempotencyKey="bg-1")
    assert first["run"]["status"] == "RUNNING"
    await eventually(lambda: has_status(gql, run_id, "FAILED"), within=5)
    replay = await act(gql, APPROVE, runId=run_id, wait=False, idempotencyKey="bg-1")
    assert (replay["__typename"], replay["run"]["status"]) == ("RunDecided", "FAILED")
    assert replay["run"]["error"].startswith("RuntimeError")
    expected = [{"outcome": "RunDecided", "runStatus": "FAILED"}]
    await eventually(lambda: audited(gql, run_id, expected), within=5)  # written after the run ends


async def audited(gql, run_id: str, expected: list[dict[str, str]]) -> bool:
    query = "query($id: ID!) { decisionLog(runId: $id) { outcome runStatus } }"
    return bool((await gql(query, {"id": run_id}))["data"]["decisionLog"] == expected)


async def test_a_key_whose_holder_died_is_taken_over(gql, db) -> None:
    run_id = (await start_run(gql, "file-cleaner"))["runId"]
    request = DecisionRequest(Action.APPROVE, run_id, idempotency_key="dead-1")
    past = datetime.now(UTC) - timedelta(minutes=1)
    await db["suspended_runs_idempotency"].insert_one(  # as a killed process left it
        {
            "_id": "anonymous\x00dead-1",
            "requestHash": request.fingerprint(),
            "state": "pending",
            "at": past,
            "leaseExpiresAt": past,
            "expiresAt": past + timedelta(days=7),
        }
    )
    answer = await act(gql, APPROVE, runId=run_id, idempotencyKey="dead-1")
    assert (answer["__typename"], answer["run"]["status"]) == ("RunDecided", "COMPLETED")


async def test_a_twin_that_waits_too_long_is_told_the_decision_is_in_progress(
    settings, start_app, db
) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"claim_lease_seconds": 0.3})))
    run_id = (await start_run(gql, "file-cleaner"))["runId"]
    request = DecisionRequest(Action.APPROVE, run_id, idempotency_key="busy-1")
    soon = datetime.now(UTC) + timedelta(minutes=5)  # a live holder, renewing its lease
    await db["suspended_runs_idempotency"].insert_one(
        {
            "_id": "anonymous\x00busy-1",
            "requestHash": request.fingerprint(),
            "state": "pending",
            "at": soon,
            "leaseExpiresAt": soon,
            "expiresAt": soon,
        }
    )
    answer = await act(gql, APPROVE, runId=run_id, idempotencyKey="busy-1")
    assert answer["__typename"] == "DecisionInProgress", answer


async def test_an_answer_that_applied_nothing_is_not_kept(settings, start_app) -> None:
    here = make_gql(await start_app(settings))
    elsewhere = make_gql(await start_app(settings.model_copy(update=SLOW)))  # no file-cleaner
    run_id = (await start_run(here, "file-cleaner"))["runId"]
    refused = await act(elsewhere, APPROVE, runId=run_id, idempotencyKey="retry-1")
    assert refused["__typename"] == "ExecutorUnavailable"
    retried = await act(here, APPROVE, runId=run_id, idempotencyKey="retry-1")
    assert (retried["__typename"], retried["run"]["status"]) == ("RunDecided", "COMPLETED")


async def test_keys_and_audit_records_expire_after_the_retention(settings, start_app, db) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"retention_days": 2})))
    run_id = (await start_run(gql, "file-cleaner"))["runId"]
    await act(gql, APPROVE, runId=run_id, idempotencyKey="ttl-1")
    key = await db["suspended_runs_idempotency"].find_one({"_id": "anonymous\x00ttl-1"})
    record = await db["suspended_runs_decisions"].find_one({"runId": run_id})
    for doc, start in ((key, key["at"]), (record, record["at"])):
        assert doc["expiresAt"] - start == timedelta(days=2)
    indexes = await db["suspended_runs_decisions"].index_information()
    assert any(i.get("expireAfterSeconds") == 0 for i in indexes.values())


def _keys_file(path: Path, key_digest: str, **scope: object) -> Path:
    path.write_text(json.dumps([{"name": "ops", "role": "admin", "sha256": key_digest, **scope}]))
    return path


async def test_a_replay_after_the_callers_scope_was_narrowed_answers_as_no_run(
    settings, start_app, tmp_path: Path
) -> None:
    key, digest = new_api_key()
    headers = {API_KEY_HEADER: key}
    wide = _keys_file(tmp_path / "wide.json", digest, scope="all")
    before = make_gql(await start_app(settings.model_copy(update={"api_keys_file": wide})), headers)
    run_id = (await start_run(before, "file-cleaner", resourceId="tenant-a"))["runId"]
    first = await act(before, DECLINE, runId=run_id, idempotencyKey="once-1")
    assert first["__typename"] == "RunDecided"
    narrow = _keys_file(tmp_path / "narrow.json", digest, resourceIds=["tenant-b"])
    after = make_gql(
        await start_app(settings.model_copy(update={"api_keys_file": narrow})), headers
    )
    replay = await act(after, DECLINE, runId=run_id, idempotencyKey="once-1")
    assert replay == {"__typename": "RunNotFound", "message": f"no run {run_id}"}
    again = await act(before, DECLINE, runId=run_id, idempotencyKey="once-1")
    assert (again["__typename"], again["run"]["runId"]) == ("RunDecided", run_id)


KEYS = "suspended_runs_idempotency"
BEFORE = [
    {"name": "starter", "role": "admin"},
    {"name": "bob", "role": "approver"},  # its own person: key:bob
    {"name": "carol", "role": "approver", "person": "carol"},
]


async def _kept_by_bobs_credentials(
    settings: Settings, path: Path, db: AsyncDatabase[Document]
) -> tuple[dict[str, str], str, str]:
    """bob's keys, and two runs bob approved under idempotency keys: `k1` with his key
    while it named no person (kept under `key:bob`, as this code keeps it), `k2` with a
    token of `bob` (kept under `jwt:bob`, as the code before people kept it)."""
    keys = key_file(path, BEFORE)
    async with running_app(_with_keys(settings, path)) as client:
        starter = make_gql(client, {API_KEY_HEADER: keys["starter"]})
        by_key, by_token = [(await start_run(starter, "file-cleaner"))["runId"] for _ in "12"]
        first = await act(make_gql(client, {API_KEY_HEADER: keys["bob"]}), APPROVE, **_k1(by_key))
        # `bob` as the key file spells him: a `jwt:Bob` record answers only a token of `Bob`.
        second = await act(_token_of(client, "bob"), APPROVE, **_k2(by_token))
    assert first["__typename"] == second["__typename"] == "RunDecided"
    assert await db[KEYS].find_one({"_id": "key:bob\x00k1"}) is not None
    kept = await db[KEYS].find_one_and_delete({"_id": "person:bob\x00k2"})
    assert kept is not None
    await db[KEYS].insert_one({**kept, "_id": "jwt:bob\x00k2"})
    return keys, by_key, by_token


def _with_keys(settings: Settings, path: Path) -> Settings:
    return settings.model_copy(update={"api_keys_file": path, "jwt_secret": SECRET_SETTING})


def _token_of(client: httpx.AsyncClient, sub: str) -> Gql:
    body = {"sub": sub, "role": "approver", "suspended_runs_scope": "all"}
    return make_gql(client, bearer(token(**body)))


def _k1(run_id: str) -> dict[str, str]:
    return {"runId": run_id, "idempotencyKey": "k1"}


def _k2(run_id: str) -> dict[str, str]:
    return {"runId": run_id, "idempotencyKey": "k2"}


@contextlib.asynccontextmanager
async def _named_as_people(
    settings: Settings, tmp_path: Path, db: AsyncDatabase[Document]
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str], str, str]]:
    """Keys kept by bob's key and token, then the key file naming each key's person: a
    server on it, bob's credentials' keys, and the runs each decided."""
    path = tmp_path / "keys.json"
    keys, by_key, by_token = await _kept_by_bobs_credentials(settings, path, db)
    key_file(path, [{**entry, "person": entry["name"]} for entry in BEFORE], keys)
    async with running_app(_with_keys(settings, path)) as client:
        yield client, keys, by_key, by_token


async def test_a_key_kept_under_a_credential_answers_its_persons_other_credentials(
    settings: Settings, tmp_path: Path, db: AsyncDatabase[Document]
) -> None:
    async with _named_as_people(settings, tmp_path, db) as (client, keys, by_key, by_token):
        bob_key = make_gql(client, {API_KEY_HEADER: keys["bob"]})
        bob_token = _token_of(client, "bob")
        for gql, once in ((bob_token, _k1(by_key)), (bob_key, _k2(by_token))):
            repeat = await act(gql, APPROVE, **once)
            assert repeat["__typename"] == "RunDecided", repeat  # not RunNotSuspended
            assert repeat["run"]["status"] == "COMPLETED"
        reused = await bob_token(APPROVE, {"input": _k1(by_token)})  # k1 was for another run
        assert reused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_a_key_kept_under_a_credential_answers_no_other_person(
    settings: Settings, tmp_path: Path, db: AsyncDatabase[Document]
) -> None:
    async with _named_as_people(settings, tmp_path, db) as (client, keys, by_key, by_token):
        carol_key = make_gql(client, {API_KEY_HEADER: keys["carol"]})
        for gql, once in (
            (carol_key, _k1(by_key)),
            (_token_of(client, "carol"), _k2(by_token)),
            (_token_of(client, "key:bob"), _k1(by_key)),  # a token, not bob's key
        ):
            assert (await act(gql, APPROVE, **once))["__typename"] == "RunNotSuspended"


class _Finds(monitoring.CommandListener):
    """The filters of the `find`s a client sent to the idempotency keys."""

    def __init__(self) -> None:
        self.filters: list[Document] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "find" and event.command["find"] == KEYS:
            self.filters.append(event.command["filter"])

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


ISSUER = "https://sso.a.example/"


def _unrelated_keys(count: int) -> list[Document]:
    """Answered keys of others, and of bob under other keys: what a scan would read."""
    at = datetime.now(UTC)
    held = [f"jwt:u{i}\x00k1" if i % 2 else f"key:bob\x00other-{i}" for i in range(count)]
    return [
        {"_id": key, "state": "answered", "requestHash": "h", "answer": {}, "at": at}
        for key in held
    ]


async def test_a_key_kept_before_is_looked_up_by_its_persons_ids_alone(
    settings: Settings, tmp_path: Path, db: AsyncDatabase[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    finds = _Finds()
    monkeypatch.setattr(
        database,
        "connect",
        lambda uri: AsyncMongoClient(uri, tz_aware=True, event_listeners=[finds]),
    )
    path = tmp_path / "keys.json"
    keys = key_file(path, [{**entry, "person": entry["name"]} for entry in BEFORE])
    await db[KEYS].insert_many(_unrelated_keys(2000))
    persons = {f"{ISSUER} 1042": "bob", "1043": "carol"}
    update = {"jwt_persons": persons}
    async with running_app(_with_keys(settings, path).model_copy(update=update)) as client:
        starter = make_gql(client, {API_KEY_HEADER: keys["starter"]})
        run_id = (await start_run(starter, "file-cleaner"))["runId"]
        finds.filters.clear()
        bob = make_gql(client, {API_KEY_HEADER: keys["bob"]})
        assert (await act(bob, APPROVE, **_k1(run_id)))["__typename"] == "RunDecided"
    [lookup] = [found for found in finds.filters if isinstance(found["_id"], dict)]
    # bob's key, his person's name as a token, his issuer's subject; not `jwt:1042`.
    holders = ["key:bob", "jwt:bob", f"jwt:{ISSUER} 1042"]
    ids = lookup["_id"]["$in"]
    assert all(isinstance(held, str) for held in ids), ids  # exact ids, no pattern
    assert sorted(ids) == sorted(f"{holder}\x00k1" for holder in holders)
    assert lookup == {"_id": {"$in": ids}}  # and nothing else asked
    explained = {"explain": {"find": KEYS, "filter": lookup}, "verbosity": "executionStats"}
    assert (await db.command(explained))["executionStats"]["totalDocsExamined"] <= len(holders)
