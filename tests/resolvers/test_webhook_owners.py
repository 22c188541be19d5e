"""Webhooks follow their owner, on the real server (resolvers/webhook_owners.py): a key
owner revoked or demoted at a reload of API_KEYS_FILE, a token owner not seen for
WEBHOOK_OWNER_TOKEN_DAYS, and an admin taking a webhook over."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from pymongo.asynchronous.database import AsyncDatabase

from suspended_runs.resolvers.webhook_owners import check_token_owners
from suspended_runs.server import Settings
from suspended_runs.storage import Document, Storage
from suspended_runs.storage.types import EVENTS_COLLECTION, WEBHOOKS_COLLECTION
from tests.builders import SECRET_SETTING, bearer, key_file, token
from tests.helpers import Gql, act, eventually, make_gql, running_app, start_run
from tests.resolvers.conftest import people
from tests.webhook_receiver import Receiver

EU = {"resourceIds": ["tenant-eu"]}
CAST: list[dict[str, Any]] = [
    {"name": "ops", "role": "admin"},
    {"name": "eu-admin", "role": "admin", "scope": EU},
]
CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret webhook { id } } } }"""
TAKE_OVER = """mutation($input: WebhookInput!) { takeOverWebhook(input: $input) {
  __typename ... on WebhookTakenOver { webhook { disabled disabledReason createdBy } }
  ... on Problem { message } } }"""
LISTED = "{ webhooks { id disabled disabledReason createdBy } }"
HOUR = timedelta(hours=1)


def reloading(settings: Settings, keys: Path, **extra: Any) -> Settings:
    update = {"api_keys_file": keys, "api_keys_reload_seconds": 0.1, **extra}
    return settings.model_copy(update=update)


async def made(gql: Gql, url: str) -> tuple[str, str]:
    """A webhook of run.suspended to `url`: its id and secret."""
    body = await gql(CREATE, {"input": {"url": url, "events": ["RUN_SUSPENDED"]}})
    created = body["data"]["createWebhook"]
    return created["webhook"]["id"], created["secret"]


async def listed(gql: Gql) -> list[dict[str, Any]]:
    webhooks: list[dict[str, Any]] = (await gql(LISTED))["data"]["webhooks"]
    return webhooks


async def refused(client: httpx.AsyncClient, key: str) -> bool:
    """Whether the key is refused (the reload that revoked it happened)."""
    answer = await client.post("/graphql", json={"query": LISTED}, headers={"x-api-key": key})
    return answer.status_code == 401


async def test_a_revoked_owners_webhook_is_disabled_until_an_admin_takes_it_over(
    settings: Settings, tmp_path: Path, db: AsyncDatabase[Document]
) -> None:
    path = tmp_path / "keys.json"
    keys = key_file(path, CAST)
    with Receiver() as receiver:
        async with running_app(reloading(settings, path)) as client:
            who = people(client, keys)
            webhook_id, secret = await made(who["eu-admin"], receiver.url)
            key_file(path, CAST[:1], keys)  # eu-admin's key removed
            await eventually(lambda: refused(client, keys["eu-admin"]), within=10)
            await eventually(lambda: _disabled(who["ops"]), within=10)  # checked after the swap
            [webhook] = await listed(who["ops"])
            assert webhook["disabled"] and webhook["createdBy"] == "key:eu-admin"
            assert webhook["disabledReason"] == (
                "its owner key:eu-admin is no longer in API_KEYS_FILE"
            )
            unseen = await start_run(who["ops"], "file-cleaner", resourceId="tenant-eu")

            async def fanned_out() -> bool:
                return await db[EVENTS_COLLECTION].count_documents({"fannedOut": False}) == 0

            await eventually(fanned_out, within=10)
            taken = await act(who["ops"], TAKE_OVER, id=webhook_id)
            assert taken == {
                "__typename": "WebhookTakenOver",
                "webhook": {"disabled": False, "disabledReason": None, "createdBy": "key:ops"},
            }
            seen = await start_run(who["ops"], "file-cleaner", resourceId="tenant-eu")
            await eventually(lambda: _told(receiver, secret), within=10)
    runs = [event["data"]["run"]["runId"] for event in receiver.events(secret)]
    assert runs == [seen["runId"]] and unseen["runId"] not in runs


async def _disabled(gql: Gql) -> bool:
    return all(webhook["disabled"] for webhook in await listed(gql))


async def _told(receiver: Receiver, secret: str) -> bool:
    return bool(receiver.events(secret))


@pytest.mark.parametrize(
    ("now", "reason"),
    [
        ({"role": "approver"}, "no longer holds admin over its scope"),
        ({"scope": {"resourceIds": ["tenant-us"]}}, "no longer holds admin over its scope"),
        (
            {"scope": {"resourceIds": ["tenant-eu"], "agentIds": ["one"]}},
            "no longer holds admin over its scope",
        ),
        ({"scope": "all"}, None),  # more than before: it still holds the webhook's scope
    ],
)
async def test_a_demoted_owners_webhook_is_disabled_at_the_reload(
    settings: Settings, tmp_path: Path, now: dict[str, Any], reason: str | None
) -> None:
    path = tmp_path / "keys.json"
    keys = key_file(path, CAST)
    async with running_app(reloading(settings, path)) as client:
        who = people(client, keys)
        await made(who["eu-admin"], "http://127.0.0.1:9/hook")
        changed = [CAST[0], {**CAST[1], **now}]
        for marker in ("reloaded", "then-reloaded"):  # the second after the first's checks
            changed.append({"name": marker})
            keys = key_file(path, changed, keys)
            await eventually(lambda: _reloaded(client, keys[marker]), within=10)  # noqa: B023
        [webhook] = await listed(who["ops"])
    assert webhook["disabled"] is (reason is not None)
    assert webhook["disabledReason"] == (reason and f"its owner key:eu-admin {reason}")


async def _reloaded(client: httpx.AsyncClient, key: str) -> bool:
    return not await refused(client, key)


async def test_a_token_owner_not_seen_for_the_days_set_loses_its_webhooks(
    settings: Settings, db: AsyncDatabase[Document]
) -> None:
    rules = settings.model_copy(update={"jwt_secret": SECRET_SETTING})
    admin = {"role": "admin", "suspended_runs_scope": "all"}
    long_ago = datetime.now(UTC) - timedelta(days=40)
    async with running_app(rules) as client:
        seen, gone = (make_gql(client, bearer(token(sub=sub, **admin))) for sub in "ab")
        kept, lost = [await made(gql, "http://127.0.0.1:9/hook") for gql in (seen, gone)]
        hooks = db[WEBHOOKS_COLLECTION]
        await hooks.update_many({}, {"$set": {"ownerSeenAt": long_ago}})
        viewer = make_gql(client, bearer(token(sub="a", role="viewer")))
        await viewer(LISTED)  # a token of another role says nothing
        assert (await hooks.find_one({"_id": kept[0]}) or {})["ownerSeenAt"] < long_ago + HOUR
        await seen(LISTED)  # an admin token of its owner
        uri = settings.mongodb_uri or ""
        storage = Storage.open(uri, settings.mongodb_db, retention=timedelta(days=1))
        try:
            before = await storage.webhooks.changes()
            disabled = await check_token_owners(storage, timedelta(days=30), datetime.now(UTC))
            changes = await storage.webhooks.changes() - before  # the deliverer reads again
        finally:
            await storage.close()
        assert disabled == 1 and changes == 1
        states = {w["id"]: (w["disabled"], w["disabledReason"]) for w in await listed(seen)}
    assert states == {
        kept[0]: (False, None),
        lost[0]: (True, "its owner has presented no admin token for 30 days"),
    }


async def test_only_an_admin_who_manages_a_webhook_and_holds_its_scope_takes_it_over(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "keys.json"
    eve: list[dict[str, Any]] = [
        {**CAST[1], "person": "eve"},
        {"name": "eu-admin-2", "role": "admin", "scope": EU, "person": "Eve"},
    ]
    others: list[dict[str, Any]] = [
        {"name": "eu-other", "role": "admin", "scope": EU},
        {"name": "us-admin", "role": "admin", "scope": {"resourceIds": ["tenant-us"]}},
        {"name": "approver", "role": "approver"},
    ]
    keys = key_file(path, [CAST[0], *eve, *others])
    async with running_app(reloading(settings, path)) as client:
        who = people(client, keys)
        webhook_id, _ = await made(who["eu-admin"], "http://127.0.0.1:9/hook")
        answers = {
            name: (await act(who[name], TAKE_OVER, id=webhook_id))["__typename"]
            for name in ("approver", "eu-other", "us-admin", "eu-admin-2")
        }
    assert answers == {
        "approver": "Forbidden",
        "eu-other": "WebhookNotFound",  # another person's, and this admin is not of every run
        "us-admin": "WebhookNotFound",
        "eu-admin-2": "WebhookTakenOver",  # eve's other key, holding the webhook's scope
    }
