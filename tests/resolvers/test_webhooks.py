"""Managing webhooks over GraphQL (resolvers/webhooks.py): admins only, a secret shown
once, invalid URLs named, a scoped admin limited to what they made, caps per creator, per
scope and in all, deliveries paged and redelivered, a rotated secret signing beside the
new one."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook as Verifier

from suspended_runs.server import Settings
from tests.builders import SECRET_SETTING, bearer, token
from tests.helpers import eventually, make_gql, running_app, start_run
from tests.webhook_receiver import Receiver

CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  __typename
  ... on WebhookCreated { secret webhook { id url events format disabled createdBy
      filter { agentId } } }
  ... on InvalidWebhook { message field }
  ... on TooManyWebhooks { message cap limit }
  ... on Forbidden { message }
} }"""
DELETE = """mutation($input: WebhookInput!) { deleteWebhook(input: $input) {
  __typename ... on WebhookDeleted { id } ... on Problem { message } } }"""
ROTATE = """mutation($input: WebhookInput!) { rotateWebhookSecret(input: $input) {
  __typename ... on WebhookSecretRotated { secret webhook { id } } ... on Problem { message } } }"""
DELIVERIES = """query($id: ID!, $first: Int, $after: String) {
  webhookDeliveries(webhookId: $id, first: $first, after: $after) {
    hasMore nextCursor deliveries { id event runId status attempts lastStatusCode deliveredAt }
} }"""
REDELIVER = """mutation($input: RedeliverWebhookEventInput!) {
  redeliverWebhookEvent(input: $input) {
  __typename ... on WebhookRedelivered { delivery { id status } } ... on Problem { message } } }"""

ADMIN = bearer(token(role="admin", sub="ops", suspended_runs_scope="all"))
SCOPED_ADMIN = bearer(
    token(role="admin", sub="tenant-a-ops", suspended_runs_scope={"resourceIds": ["a"]})
)
APPROVER = bearer(token(role="approver", suspended_runs_scope="all"))
TENANT_A = {"resourceIds": ["a"]}


def authenticated(settings: Settings) -> Settings:
    return settings.model_copy(update={"jwt_secret": SECRET_SETTING})


async def create(gql: Any, url: str, **extra: Any) -> dict[str, Any]:
    body = await gql(CREATE, {"input": {"url": url, "events": ["RUN_SUSPENDED"], **extra}})
    assert "errors" not in body, body
    result: dict[str, Any] = body["data"]["createWebhook"]
    return result


async def test_only_admins_make_webhooks_and_a_bad_url_is_named(settings: Settings) -> None:
    async with running_app(authenticated(settings)) as client:
        approver = make_gql(client, APPROVER)
        assert (await create(approver, "http://127.0.0.1:9/x"))["__typename"] == "Forbidden"
        admin = make_gql(client, ADMIN)
        for url in ("ftp://example.com/x", "http://user:pw@127.0.0.1/x", "not a url"):
            refused = await create(admin, url)
            assert refused == {**refused, "__typename": "InvalidWebhook", "field": "url"}
        made = await create(admin, "http://127.0.0.1:9/hook", description="ops")
        assert made["__typename"] == "WebhookCreated"
        assert made["secret"].startswith("whsec_")
        assert made["webhook"]["createdBy"] == "jwt:ops"
        listed = await admin("{ webhooks { id url disabled } }")
        assert listed["data"]["webhooks"] == [
            {"id": made["webhook"]["id"], "url": "http://127.0.0.1:9/hook", "disabled": False}
        ]
        assert "secret" not in str(listed)
        denied = await approver("{ webhooks { id } }")
        assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_a_scoped_admin_sees_and_manages_only_their_own(settings: Settings) -> None:
    async with running_app(authenticated(settings)) as client:
        admin, scoped = make_gql(client, ADMIN), make_gql(client, SCOPED_ADMIN)
        theirs = (await create(admin, "http://127.0.0.1:9/a"))["webhook"]["id"]
        mine = (await create(scoped, "http://127.0.0.1:9/b"))["webhook"]["id"]
        assert [w["id"] for w in (await scoped("{ webhooks { id } }"))["data"]["webhooks"]] == [
            mine
        ]
        gone = await scoped(DELETE, {"input": {"id": theirs}})
        assert gone["data"]["deleteWebhook"]["__typename"] == "WebhookNotFound"
        deleted = await scoped(DELETE, {"input": {"id": mine}})
        assert deleted["data"]["deleteWebhook"] == {"__typename": "WebhookDeleted", "id": mine}


async def test_a_scoped_admins_webhook_is_told_only_of_runs_in_their_scope(
    settings: Settings,
) -> None:
    with Receiver() as receiver:
        async with running_app(authenticated(settings)) as client:
            made = await create(make_gql(client, SCOPED_ADMIN), receiver.url)
            admin = make_gql(client, ADMIN)
            await start_run(admin, "file-cleaner", resourceId="b")
            inside = await start_run(admin, "file-cleaner", resourceId="a")

            async def told() -> bool:
                return len(receiver.received) >= 1

            # Events are turned into deliveries in their order: the first run's was passed
            # by before the second's was delivered.
            await eventually(told, within=10)
            runs = [e["data"]["run"]["runId"] for e in receiver.events(made["secret"])]
            assert runs == [inside["runId"]]


async def test_deliveries_are_paged_redelivered_and_signed_by_both_secrets_in_a_rotation(
    settings: Settings,
) -> None:
    with Receiver() as receiver:
        async with running_app(authenticated(settings)) as client:
            admin = make_gql(client, ADMIN)
            made = await create(admin, receiver.url)
            webhook_id, first_secret = made["webhook"]["id"], made["secret"]
            for _ in range(3):
                await start_run(admin, "file-cleaner")

            async def all_delivered() -> bool:
                page = (await admin(DELIVERIES, {"id": webhook_id, "first": 10}))["data"]
                statuses = [d["status"] for d in page["webhookDeliveries"]["deliveries"]]
                return statuses == ["DELIVERED"] * 3

            await eventually(all_delivered, within=15)
            last = await paged_by_two(admin, webhook_id)
            rotated = (await admin(ROTATE, {"input": {"id": webhook_id}}))["data"]
            new_secret = rotated["rotateWebhookSecret"]["secret"]
            assert new_secret != first_secret
            again = await admin(REDELIVER, {"input": {"deliveryId": last["deliveries"][0]["id"]}})
            assert again["data"]["redeliverWebhookEvent"]["__typename"] == "WebhookRedelivered"

            async def redelivered() -> bool:
                return len(receiver.received) == 4

            await eventually(redelivered, within=10)
            resent = receiver.received[-1]
            for secret in (first_secret, new_secret):  # either verifies during the rotation
                Verifier(secret).verify(resent.body, resent.headers)
            assert resent.message_id in {r.message_id for r in receiver.received[:3]}
            unknown = await admin(REDELIVER, {"input": {"deliveryId": "dlv_nothing"}})
            assert (
                unknown["data"]["redeliverWebhookEvent"]["__typename"] == "WebhookDeliveryNotFound"
            )


async def paged_by_two(admin: Any, webhook_id: str) -> dict[str, Any]:
    """Three deliveries, asked two at a time: the last page."""
    first = (await admin(DELIVERIES, {"id": webhook_id, "first": 2}))["data"]
    page = first["webhookDeliveries"]
    assert page["hasMore"] and len(page["deliveries"]) == 2
    rest = await admin(DELIVERIES, {"id": webhook_id, "first": 2, "after": page["nextCursor"]})
    last: dict[str, Any] = rest["data"]["webhookDeliveries"]
    assert not last["hasMore"] and len(last["deliveries"]) == 1
    return last


async def test_an_out_of_range_page_is_a_bad_argument(client: httpx.AsyncClient) -> None:
    body = await make_gql(client)(DELIVERIES, {"id": "wh_x", "first": 1000})
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def capped(settings: Settings, creator: int, scope: int, total: int) -> Settings:
    caps = {
        "webhook_max_per_creator": creator,
        "webhook_max_per_scope": scope,
        "webhook_max_total": total,
    }
    return authenticated(settings).model_copy(update=caps)


def admin_of(subject: str, scope: Any) -> dict[str, str]:
    return bearer(token(role="admin", sub=subject, suspended_runs_scope=scope))


async def test_webhooks_past_a_cap_are_refused_per_creator_per_scope_and_in_all(
    settings: Settings,
) -> None:
    async with running_app(capped(settings, creator=2, scope=3, total=5)) as client:
        a1, a2 = (make_gql(client, admin_of(s, TENANT_A)) for s in ("a1", "a2"))
        b, everyone = (
            make_gql(client, admin_of("b", {"resourceIds": ["b"]})),
            make_gql(client, ADMIN),
        )
        made = [(await create(a1, f"http://127.0.0.1:9/{i}"))["__typename"] for i in range(3)]
        assert made == ["WebhookCreated", "WebhookCreated", "TooManyWebhooks"]
        refused = await create(a1, "http://127.0.0.1:9/x")
        assert (refused["cap"], refused["limit"]) == ("PER_CREATOR", 2)
        assert "2 webhooks" in refused["message"]
        assert (await create(a2, "http://127.0.0.1:9/y"))["__typename"] == "WebhookCreated"
        refused = await create(a2, "http://127.0.0.1:9/z")  # tenant a has its 3
        assert (refused["cap"], refused["limit"]) == ("PER_SCOPE", 3)
        assert (await create(b, "http://127.0.0.1:9/b"))["__typename"] == "WebhookCreated"
        assert (await create(everyone, "http://127.0.0.1:9/c"))["__typename"] == "WebhookCreated"
        refused = await create(everyone, "http://127.0.0.1:9/d")  # 5 in all
        assert (refused["cap"], refused["limit"]) == ("TOTAL", 5)
        listed = (await everyone("{ webhooks { url disabled } }"))["data"]["webhooks"]
        assert len(listed) == 5 and not any(w["disabled"] for w in listed)
        mine = (await a1("{ webhooks { id } }"))["data"]["webhooks"]
        await a1(DELETE, {"input": {"id": mine[0]["id"]}})
        assert (await create(a1, "http://127.0.0.1:9/again"))["__typename"] == "WebhookCreated"


async def test_webhooks_over_a_cap_lowered_since_are_kept_and_new_ones_refused(
    settings: Settings,
) -> None:
    async with running_app(capped(settings, creator=5, scope=5, total=5)) as client:
        admin = make_gql(client, ADMIN)
        for i in range(4):
            assert (await create(admin, f"http://127.0.0.1:9/{i}"))[
                "__typename"
            ] == "WebhookCreated"
    async with running_app(capped(settings, creator=2, scope=5, total=5)) as client:
        admin = make_gql(client, ADMIN)
        refused = await create(admin, "http://127.0.0.1:9/new")
        assert (refused["__typename"], refused["cap"]) == ("TooManyWebhooks", "PER_CREATOR")
        listed = (await admin("{ webhooks { url disabled } }"))["data"]["webhooks"]
        assert [w["url"][-1] for w in listed] == ["0", "1", "2", "3"]
        assert not any(w["disabled"] for w in listed)


async def test_concurrent_creations_never_pass_a_cap_together(settings: Settings) -> None:
    """Each counts the others as it is made: some may all be refused, never too many made,
    and a refused one leaves nothing behind (made one at a time after, the cap is met)."""
    async with running_app(capped(settings, creator=3, scope=100, total=100)) as client:
        admin = make_gql(client, ADMIN)
        answers = await asyncio.gather(
            *(create(admin, f"http://127.0.0.1:9/{i}") for i in range(12))
        )
        kinds = [a["__typename"] for a in answers]
        assert set(kinds) <= {"WebhookCreated", "TooManyWebhooks"}
        assert kinds.count("WebhookCreated") <= 3
        while (await create(admin, "http://127.0.0.1:9/more"))["__typename"] == "WebhookCreated":
            pass
        listed = (await admin("{ webhooks { id disabled } }"))["data"]["webhooks"]
    assert len(listed) == 3 and not any(w["disabled"] for w in listed)
