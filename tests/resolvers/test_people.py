"""People on the real server (resolvers/people.py): a person's keys and tokens are one
reviewer, names compare folded, and what was stored under credentials is read as people."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pymongo.asynchronous.database import AsyncDatabase

from suspended_runs.resolvers.people import (
    People,
    fold,
    key_people,
    refusal,
    spellings,
    token_people,
)
from suspended_runs.runtime import ConfigurationError
from suspended_runs.server import Settings, create_app
from suspended_runs.storage import Document
from suspended_runs.storage.types import DECISIONS_COLLECTION
from tests.builders import SECRET_SETTING, bearer, key_file, token
from tests.helpers import Gql, act, make_gql, running_app
from tests.helpers import start_run as start
from tests.resolvers.conftest import people

APPROVE = """mutation($input: ApproveToolCallInput!) { approveToolCall(input: $input) {
  __typename ... on ApprovalRecorded { approvalsNeeded } ... on Problem { message } } }"""
APPROVALS = """query($id: ID!) { agentRun(runId: $id) { toolCalls {
  approvalsNeeded approvals { by person } } } }"""
QUORUM = {"agentId": "file-cleaner", "approvals": 2, "forbidSelfApproval": True}
CAST = [
    {"name": "starter", "role": "admin", "person": "root"},
    {"name": "a-laptop", "role": "approver", "person": "a"},
    {"name": "A-phone", "role": "approver", "person": "A"},  # one name once folded: one person
    {"name": "bob-laptop", "role": "approver"},  # its own person: key:bob-laptop
]


def serving(settings: Settings, keys: Path, *policies: dict[str, Any], **extra: Any) -> Settings:
    update = {"api_keys_file": keys, "jwt_secret": SECRET_SETTING, **extra}
    return settings.model_copy(update={**update, "review_policies": json.dumps(policies)})


def holding(client: httpx.AsyncClient, sub: str, role: str = "approver", **claims: Any) -> Gql:
    """A client presenting a token of `sub`."""
    body = {"sub": sub, "role": role, "suspended_runs_scope": "all", **claims}
    return make_gql(client, bearer(token(**body)))


async def approvals_of(gql: Gql, run_id: str) -> dict[str, Any]:
    run = (await gql(APPROVALS, {"id": run_id}))["data"]["agentRun"]
    call: dict[str, Any] = run["toolCalls"][0]
    return call


@contextlib.asynccontextmanager
async def quorum_run(
    settings: Settings, tmp_path: Path, **extra: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, Gql], str]]:
    """An app of CAST's keys under QUORUM, a client per key, and a run the starter started."""
    path = tmp_path / "keys.json"
    keys = key_file(path, CAST)
    async with running_app(serving(settings, path, QUORUM, **extra)) as client:
        who = people(client, keys)
        yield client, who, (await start(who["starter"], "file-cleaner"))["runId"]


async def test_a_persons_keys_and_tokens_are_one_approver(settings: Settings, tmp_path: Path):
    mapped = {"jwt_persons": {"idp|123": "a"}}
    async with quorum_run(settings, tmp_path, **mapped) as (client, who, run_id):
        for gql in (
            who["a-laptop"],
            who["A-phone"],
            holding(client, "a"),
            holding(client, "idp|123"),
        ):
            assert (await act(gql, APPROVE, runId=run_id))["approvalsNeeded"] == 1
        call = await approvals_of(who["bob-laptop"], run_id)
        assert call["approvals"] == [{"by": "key:a-laptop", "person": "person:a"}]
        assert (await act(who["bob-laptop"], APPROVE, runId=run_id))["__typename"] == "RunDecided"
        me = "{ viewer { subject person } }"
        assert (await holding(client, "idp|123")(me))["data"]["viewer"] == {
            "subject": "jwt:idp|123",
            "person": "person:a",
        }


async def test_the_starter_may_not_approve_with_another_credential(
    settings: Settings, tmp_path: Path
) -> None:
    async with quorum_run(settings, tmp_path) as (client, _, run_id):
        for sub in ("root", "ROOT", "r\u200boot", "\uff52oot"):  # case, zero width, full width
            refused = await act(holding(client, sub), APPROVE, runId=run_id)
            assert refused["__typename"] == "SelfApproval", sub


async def test_subjects_that_fold_alike_are_one_person_and_spaced_ones_are_refused(
    settings: Settings, tmp_path: Path
) -> None:
    async with quorum_run(settings, tmp_path) as (client, _, run_id):
        for sub in ("b", "b\u200b", "B", "\u0062\u200d"):
            assert (await act(holding(client, sub), APPROVE, runId=run_id))["approvalsNeeded"] == 1
        for sub in (" b", "b ", "b\u200b ", "\u200b"):
            body = {"query": "{ viewer { person } }"}
            answer = await client.post("/graphql", json=body, headers=bearer(token(sub=sub)))
            assert answer.status_code == 401, sub


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ([{"name": "a"}, {"name": "A"}], "key names 'a' and 'A' are one name once folded"),
        ([{"name": "a", "person": "x"}, {"name": "A", "person": "y"}], "'a' and 'A'"),
        ([{"name": "a", "person": "x"}, {"name": "a\u200b"}], "'a' and 'a\\u200b'"),
        ([{"name": "a "}], "key name 'a ' has whitespace around it"),
        ([{"name": "k", "person": "\u00a0a"}], "person '\\xa0a' has whitespace around it"),
    ],
)
def test_key_entries_that_fold_alike_stop_the_start_naming_both(
    settings: Settings, tmp_path: Path, entries: list[dict[str, Any]], problem: str
) -> None:
    path = tmp_path / "keys.json"
    key_file(path, entries)
    with pytest.raises(ConfigurationError) as refused:
        create_app(settings.model_copy(update={"api_keys_file": path}))
    assert str(refused.value).startswith(f"API_KEYS_FILE {path}: ") and problem in str(
        refused.value
    )


def test_jwt_persons_that_cannot_name_a_person_stop_the_start() -> None:
    for mapping, problem in (
        ({"idp|1": " a"}, "whitespace"),
        ({"x": "a", "X": "b"}, "fold"),
        ({"https://idp.example/  1": "a"}, "not `<issuer> <subject>`"),  # two spaces
        ({"https://idp\t.example/ 1": "a"}, "an issuer without whitespace"),
    ):
        with pytest.raises(ValueError, match=f"jwt_persons(.|\n)*{problem}"):
            Settings(jwt_persons=mapping)


async def test_a_reviewer_person_is_every_credential_and_a_key_only_that_key(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "keys.json"
    keys = key_file(path, CAST)
    policy = {"agentId": "file-cleaner", "reviewers": ["person:A", "key:bob-laptop"]}
    async with running_app(serving(settings, path, policy)) as client:
        who = people(client, keys)
        first, second = [(await start(who["starter"], "file-cleaner"))["runId"] for _ in "ab"]
        mine = "{ suspendedRuns(filter: {assignedToMe: true}) { total } }"
        assert (await who["A-phone"](mine))["data"]["suspendedRuns"]["total"] == 2
        assert (await holding(client, "bob-laptop")(mine))["data"]["suspendedRuns"]["total"] == 0
        refused = await act(holding(client, "bob-laptop"), APPROVE, runId=first)
        assert refused["__typename"] == "NotAReviewer"  # a token is not the key
        assert (await act(holding(client, "a"), APPROVE, runId=first))["__typename"] == "RunDecided"
        decided = await act(who["bob-laptop"], APPROVE, runId=second)
        assert decided["__typename"] == "RunDecided"


ISSUER_A, ISSUER_B = "https://sso.a.example/", "https://sso.b.example/"


async def test_an_issuer_entry_maps_that_issuers_subject_alone_and_first(
    settings: Settings, tmp_path: Path
) -> None:
    persons = {f"{ISSUER_A} 1042": "A", "1042": "bob"}
    me = "{ viewer { subject person } }"
    async with quorum_run(settings, tmp_path, jwt_persons=persons) as (client, who, run_id):
        from_a, from_b = (holding(client, "1042", iss=iss) for iss in (ISSUER_A, ISSUER_B))
        for gql, subject, person in (
            (from_a, f"jwt:{ISSUER_A} 1042", "person:a"),
            (from_b, "jwt:1042", "person:bob"),
            (holding(client, "1042"), "jwt:1042", "person:bob"),  # no `iss`: no issuer
        ):
            viewer = (await gql(me))["data"]["viewer"]
            assert viewer == {"subject": subject, "person": person}
        spoof = bearer(token(sub=f"{ISSUER_A} 1042", iss=ISSUER_B))  # B's subject, spelt as A's
        assert (await client.post("/graphql", json={"query": me}, headers=spoof)).status_code == 401
        assert (await act(from_a, APPROVE, runId=run_id))["approvalsNeeded"] == 1
        assert (await act(who["a-laptop"], APPROVE, runId=run_id))["approvalsNeeded"] == 1
        call = await approvals_of(from_b, run_id)  # stored with its issuer, read as a's
        assert call["approvals"] == [{"by": f"jwt:{ISSUER_A} 1042", "person": "person:a"}]
        assert (await act(from_b, APPROVE, runId=run_id))["__typename"] == "RunDecided"


EU = {"resourceIds": ["eu"]}
BEFORE_PEOPLE: list[dict[str, Any]] = [
    {"name": "alice", "role": "admin"},
    {"name": "bob", "role": "approver"},
    {"name": "carol", "role": "approver"},
    {"name": "eve", "role": "admin", "scope": EU},
]
"""Keys that name no person, as every key was before people."""
LOG = "query($id: ID!) { decisionLog(runId: $id) { decidedBy person } }"


async def test_records_stored_under_credentials_are_read_as_their_people(
    settings: Settings, tmp_path: Path, db: AsyncDatabase[Document]
) -> None:
    """Written under `key:` and `jwt:` subjects as the code before people wrote them (every
    key its own person, audit records without one), then read once the keys name their
    people: approvals, startedBy, the audit log, an idempotency key, a webhook's createdBy."""
    path, cast = tmp_path / "keys.json", BEFORE_PEOPLE
    keys = key_file(path, cast)
    quorum = {**QUORUM, "approvals": 3}
    async with running_app(serving(settings, path, quorum)) as client:
        who = people(client, keys)
        run_id = (await start(who["alice"], "file-cleaner"))["runId"]
        await act(who["bob"], APPROVE, runId=run_id, idempotencyKey="k1")
        await act(holding(client, "carol"), APPROVE, runId=run_id)
        hook = {"url": "http://127.0.0.1:9/h", "events": ["RUN_SUSPENDED"]}
        await who["eve"](CREATE_WEBHOOK, {"input": hook})
    await db[DECISIONS_COLLECTION].update_many({}, {"$unset": {"person": 1}})
    key_file(path, [{**entry, "person": entry["name"]} for entry in cast], keys)
    async with running_app(serving(settings, path, quorum)) as client:
        who = people(client, keys)
        refused = await act(holding(client, "alice"), APPROVE, runId=run_id)
        assert refused["__typename"] == "SelfApproval"  # startedBy key:alice is alice
        again = await act(holding(client, "bob"), APPROVE, runId=run_id)
        assert again["approvalsNeeded"] == 1  # bob's key approved: bob is counted once
        assert (await act(who["carol"], APPROVE, runId=run_id))["approvalsNeeded"] == 1
        repeat = await act(who["bob"], APPROVE, runId=run_id, idempotencyKey="k1")
        assert repeat["approvalsNeeded"] == 2  # the answer kept under key:bob
        records = (await holding(client, "bob")(LOG, {"id": run_id}))["data"]["decisionLog"]
        assert records[:2] == [
            {"decidedBy": "key:bob", "person": "person:bob"},
            {"decidedBy": "jwt:carol", "person": "person:carol"},
        ]
        assert records[-1] == {"decidedBy": "key:carol", "person": "person:carol"}
        eve = holding(client, "eve", role="admin", suspended_runs_scope=EU)
        assert len((await eve("{ webhooks { id } }"))["data"]["webhooks"]) == 1


async def test_idempotency_keys_are_a_persons(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    keys = key_file(path, CAST)
    async with running_app(serving(settings, path)) as client:
        who = people(client, keys)
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        once = {"runId": run_id, "idempotencyKey": "mine"}
        first = await act(who["a-laptop"], APPROVE, **once)
        again = await act(holding(client, "a"), APPROVE, **once)
        assert first["__typename"] == again["__typename"] == "RunDecided"


CREATE_WEBHOOK = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  __typename } }"""


def test_names_fold_by_unicode_case_and_format_characters() -> None:
    assert {fold(n) for n in ("Alice", "ALICE", "al\u200bice", "\uff21lice", "alice\u2060")} == {
        "alice"
    }
    assert fold("Stra\u00dfe") == fold("STRASSE")
    assert refusal("alice") is None and refusal("\u200b") is not None
    assert key_people([("k1", "Alice"), ("K1", "alice")]) == {"k1": "person:alice"}
    assert token_people({"Idp|1": "A"}) == {"idp|1": "a"}
    mapping = People(keys={"k1": "person:alice"}, tokens={"idp|1": "a"})
    assert mapping.person_of("key:K1") == mapping.person_of("person:ALICE") == "person:alice"
    assert mapping.person_of("key:k2") == "key:k2" and mapping.person_of("jwt:IDP|1") == "person:a"
    assert mapping.person_of("anonymous:x") == "anonymous:x"


def test_an_issuer_entry_is_that_issuers_subject_alone() -> None:
    people = People(tokens=token_people({f"{ISSUER_A} Idp|1": "a", "idp|1": "b", "x y": "c"}))
    assert people.token_credential(ISSUER_A, "IDP|1") == f"{ISSUER_A} IDP|1"
    assert people.person_of(f"jwt:{ISSUER_A} IDP|1") == "person:a"
    for issuer in (ISSUER_B, None, 42, "https://sso.a.example/ x"):  # another, none, no text
        assert people.token_credential(issuer, "idp|1") == "idp|1", issuer
    assert people.token_credential(ISSUER_B, f"{ISSUER_A} idp|1") is None  # A's, from B
    assert people.token_credential(ISSUER_B, "x y") is None  # `x y` is issuer x's subject y
    assert people.token_credential("x", "y") == "x y"
    assert people.token_credential(ISSUER_B, "x  y") == "x  y"  # no entry: its own person


def test_a_persons_credentials_are_the_callers_and_those_configuration_spells() -> None:
    keys = [("Bob-Laptop", "Bob"), ("bob-ci", "bob"), ("Robot", None), ("carol", "carol")]
    persons = {f"{ISSUER_A} 1042": "BOB", "1042": "carol", "b0b": "bob"}
    people = People(key_people(keys), token_people(persons), spellings(keys, persons))
    assert people.credentials_of("jwt:BOB", "person:bob") == [
        "jwt:BOB",  # the caller's own spelling, first
        "jwt:Bob",  # a token of bob's name, as each entry spells it
        "jwt:b0b",
        "jwt:bob",
        f"jwt:{ISSUER_A} 1042",  # not `jwt:1042`: carol's
        "key:Bob-Laptop",
        "key:bob-ci",
    ]
    # A key that names no one: its own name as written (its person's keys are looked up
    # as its own), and no other credential.
    assert people.credentials_of("key:Robot", "key:robot") == ["key:Robot"]
    assert People().credentials_of("key:robot", "key:robot") == []
    persons["bob"] = "carol"  # bob's name is carol's subject: no token of it is bob's
    people = People(key_people(keys), token_people(persons), spellings(keys, persons))
    assert people.credentials_of("key:bob-ci", "person:bob") == [
        "key:bob-ci",
        "jwt:b0b",
        f"jwt:{ISSUER_A} 1042",
        "key:Bob-Laptop",
    ]
