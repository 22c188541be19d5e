"""Review policies on the real server (resolvers/reviews.py): quorum, four eyes, reviewers
and groups, escalation, and decisions bound to the arguments seen (argsHash)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from suspended_runs.runtime.demo import EXECUTIONS
from suspended_runs.server import Settings
from tests.builders import SECRET_SETTING, bearer, token
from tests.helpers import APPROVE, DECLINE, Gql, act, running_app
from tests.helpers import start_run as start
from tests.resolvers.conftest import people
from tests.webhook_receiver import Receiver

FOUR_EYES = {
    "agentId": "file-cleaner",
    "toolName": "delete_file",
    "approvals": 2,
    "reviewers": ["key:starter", "key:alice", "key:bob", "group:ops"],
    "forbidSelfApproval": True,
}
CALL = """query($id: ID!) { agentRun(runId: $id) { status startedBy toolCalls {
  toolCallId args argsHash editedArgs approvalsRequired approvalsNeeded assignedTo
  approvals { by } decision { action decidedBy editedArgs } } } }"""
RECORDED = "... on ApprovalRecorded { approvalsNeeded toolCallId run { status } }"
STALE = "... on StaleDecision { argsHash }"
APPROVE_ALL = APPROVE.replace("__typename", f"__typename {RECORDED} {STALE}", 1)


async def call_of(gql: Gql, run_id: str) -> dict[str, Any]:
    body = await gql(CALL, {"id": run_id})
    run = body["data"]["agentRun"]
    return {**run["toolCalls"][0], "status": run["status"], "startedBy": run["startedBy"]}


async def test_two_approvals_one_person_counted_once_and_no_self_approval(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed(FOUR_EYES) as who:
        run = await start(who["starter"], "file-cleaner")
        run_id, before = run["runId"], len(EXECUTIONS)
        call = await call_of(who["starter"], run_id)
        assert call["startedBy"] == "key:starter"
        assert (call["approvalsRequired"], call["approvalsNeeded"]) == (2, 2)
        assert call["assignedTo"] == FOUR_EYES["reviewers"]

        async def approve(name: str) -> dict[str, Any]:
            return await act(who[name], APPROVE_ALL, runId=run_id)

        assert (await approve("starter"))["__typename"] == "SelfApproval"
        refused = await approve("mallory")
        assert refused["__typename"] == "NotAReviewer" and "key:" not in refused["message"]
        first = await approve("alice")
        assert first["__typename"] == "ApprovalRecorded"
        assert (first["approvalsNeeded"], first["run"]["status"]) == (1, "SUSPENDED")
        assert (await approve("alice"))["approvalsNeeded"] == 1  # the same person: once
        call = await call_of(who["bob"], run_id)
        assert [a["by"] for a in call["approvals"]] == ["key:alice"]
        assert call["approvalsNeeded"] == 1 and EXECUTIONS[before:] == []
        last = await approve("bob")
        assert last["__typename"] == "RunDecided" and last["run"]["status"] == "COMPLETED"
        assert EXECUTIONS[before:] == [("delete_file", {"path": "/tmp/a.txt"})]


async def test_twenty_concurrent_last_approvals_continue_the_run_once(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed(FOUR_EYES) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        before = len(EXECUTIONS)
        await act(who["alice"], APPROVE_ALL, runId=run_id)
        answers = await asyncio.gather(
            *(act(who[f"p{i}"], APPROVE_ALL, runId=run_id) for i in range(20))
        )
        kinds = Counter(answer["__typename"] for answer in answers)
    assert kinds == {"RunDecided": 1, "RunNotSuspended": 19}
    assert EXECUTIONS[before:] == [("delete_file", {"path": "/tmp/a.txt"})]


async def test_recorded_approvals_survive_a_reconcile_and_a_restart(
    settings: Settings, keys: tuple[Path, dict[str, str]]
) -> None:
    rules = settings.model_copy(
        update={"api_keys_file": keys[0], "review_policies": json.dumps([FOUR_EYES])}
    )
    async with running_app(rules) as client:
        who = people(client, keys[1])
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        await act(who["alice"], APPROVE_ALL, runId=run_id)
        rebuilt = await who["starter"]("mutation { reconcileRuns { __typename } }")
        assert rebuilt["data"]["reconcileRuns"]["__typename"] == "RunsReconciled"
        assert (await call_of(who["bob"], run_id))["approvalsNeeded"] == 1
    async with running_app(rules) as client:  # the app stopped and started again
        who = people(client, keys[1])
        call = await call_of(who["bob"], run_id)
        assert [a["by"] for a in call["approvals"]] == ["key:alice"]
        assert (await act(who["bob"], APPROVE_ALL, runId=run_id))["__typename"] == "RunDecided"


async def test_an_edit_under_a_quorum_voids_earlier_approvals_and_stale_hashes(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed(FOUR_EYES) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        seen = (await call_of(who["alice"], run_id))["argsHash"]
        before = len(EXECUTIONS)
        await act(who["alice"], APPROVE_ALL, runId=run_id, expectedArgsHash=seen)
        edited = {"path": "/tmp/b.txt"}
        by_bob = await act(
            who["bob"], APPROVE_ALL, runId=run_id, editedArgs=edited, expectedArgsHash=seen
        )
        assert by_bob["__typename"] == "ApprovalRecorded" and by_bob["approvalsNeeded"] == 1
        call = await call_of(who["alice"], run_id)
        assert call["editedArgs"] == edited and call["args"] == {"path": "/tmp/a.txt"}
        assert call["argsHash"] != seen
        assert [a["by"] for a in call["approvals"]] == ["key:bob"]  # alice's is void
        stale = await act(who["alice"], APPROVE_ALL, runId=run_id, expectedArgsHash=seen)
        assert stale == {
            "__typename": "StaleDecision",
            "message": stale["message"],
            "argsHash": call["argsHash"],
        }
        done = await act(who["alice"], APPROVE_ALL, runId=run_id, expectedArgsHash=call["argsHash"])
        assert done["__typename"] == "RunDecided"
        assert EXECUTIONS[before:] == [("delete_file", edited)]
        decision = (await call_of(who["alice"], run_id))["decision"]
        assert decision == {"action": "APPROVE", "decidedBy": "key:alice", "editedArgs": edited}


async def test_a_stale_expected_args_hash_applies_nothing(gql: Gql) -> None:
    run = await start(gql, "file-cleaner")
    call = await call_of(gql, run["runId"])
    canonical = b'{"path":"/tmp/a.txt"}'  # RFC 8785, by hand
    assert call["argsHash"] == hashlib.sha256(canonical).hexdigest()
    stale = await act(gql, APPROVE_ALL, runId=run["runId"], expectedArgsHash="0" * 64)
    assert stale["__typename"] == "StaleDecision" and stale["argsHash"] == call["argsHash"]
    assert (await call_of(gql, run["runId"]))["status"] == "SUSPENDED"
    declined = await act(gql, DECLINE, runId=run["runId"], expectedArgsHash=call["argsHash"])
    assert declined["__typename"] == "RunDecided"


async def test_escalation_adds_reviewers_and_is_announced(reviewed: Callable[..., Any]) -> None:
    policy = {
        "agentId": "file-cleaner",
        "reviewers": ["key:alice"],
        "escalateAfterSeconds": 1,
        "escalateTo": ["key:carol"],
    }
    with Receiver() as receiver:
        async with reviewed(policy) as who:
            made = await who["starter"](
                """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
                ... on WebhookCreated { secret } } }""",
                {"input": {"url": receiver.url, "events": ["APPROVAL_ESCALATED"]}},
            )
            secret = made["data"]["createWebhook"]["secret"]
            run_id = (await start(who["starter"], "file-cleaner"))["runId"]
            early = await act(who["carol"], APPROVE_ALL, runId=run_id)
            assert early["__typename"] == "NotAReviewer"
            for _ in range(100):
                if receiver.received:
                    break
                await asyncio.sleep(0.1)
            call = await call_of(who["carol"], run_id)
            assert call["assignedTo"] == ["key:alice", "key:carol"]
            late = await act(who["carol"], APPROVE_ALL, runId=run_id)
            assert late["__typename"] == "RunDecided"
    [event] = receiver.events(secret)
    assert event["type"] == "approval.escalated"
    assert event["data"]["run"]["runId"] == run_id


async def test_a_group_in_a_token_makes_a_reviewer(reviewed: Callable[..., Any]) -> None:
    policy = {"agentId": "file-cleaner", "reviewers": ["group:ops"]}
    async with reviewed(policy, jwt_secret=SECRET_SETTING) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        claims = {"role": "approver", "suspended_runs_scope": "all"}
        stranger = who["anyone"](bearer(token(sub="dave", **claims)))
        member = who["anyone"](bearer(token(sub="erin", groups=["ops"], **claims)))
        assert (await act(stranger, APPROVE_ALL, runId=run_id))["__typename"] == "NotAReviewer"
        assert (await act(member, APPROVE_ALL, runId=run_id))["__typename"] == "RunDecided"


async def test_bulk_decisions_and_idempotency_keys_follow_the_policy(
    reviewed: Callable[..., Any],
) -> None:
    bulk = f"""mutation($d: [ToolCallDecisionInput!]!) {{ decideToolCalls(decisions: $d) {{
      __typename {RECORDED} ... on Problem {{ message }} }} }}"""
    async with reviewed(FOUR_EYES) as who:
        runs = [(await start(who["starter"], "file-cleaner"))["runId"] for _ in range(2)]
        decisions = [{"runId": run_id, "action": "APPROVE"} for run_id in runs]
        by_mallory = (await who["mallory"](bulk, {"d": decisions}))["data"]["decideToolCalls"]
        assert [d["__typename"] for d in by_mallory] == ["NotAReviewer"] * 2
        by_alice = (await who["alice"](bulk, {"d": decisions}))["data"]["decideToolCalls"]
        assert [d["approvalsNeeded"] for d in by_alice] == [1, 1]
        once = {"runId": runs[0], "idempotencyKey": "bob-1"}
        first = await act(who["bob"], APPROVE_ALL, **once)
        again = await act(who["bob"], APPROVE_ALL, **once)
        assert first["__typename"] == again["__typename"] == "RunDecided"
        assert again["run"]["status"] == "COMPLETED"


async def test_refusals_name_the_policy_by_its_name_and_never_its_file_or_reviewers(
    settings: Settings, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    policies = tmp_path / "secret-place" / "policies.json"
    policies.parent.mkdir()
    policies.write_text(json.dumps([{**FOUR_EYES, "name": "deletions"}]))
    rules = settings.model_copy(update={"api_keys_file": keys[0], "review_policies_file": policies})
    async with running_app(rules) as client:
        who = people(client, keys[1])
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        refusals = [
            await act(who[name], APPROVE_ALL, runId=run_id) for name in ("mallory", "starter")
        ]
    assert [r["__typename"] for r in refusals] == ["NotAReviewer", "SelfApproval"]
    assert refusals[0]["message"].startswith("review policy 'deletions' names other reviewers")
    for refusal in refusals:
        assert "deletions" in refusal["message"]
        for told in ("secret-place", "REVIEW_POLICIES", "key:", "group:"):
            assert told not in refusal["message"]


@pytest.mark.parametrize("required", [None, True, False])
async def test_after_an_edit_an_approval_by_run_id_alone_approves_nothing_unseen(
    reviewed: Callable[..., Any], required: bool | None
) -> None:
    """Reviewer A approves deleting one file; B edits the path, voiding A's approval; A's
    script approves again by run id: under a quorum that is stale, unless the policy says
    `requireArgsHash: false` (machine approvers)."""
    policy = FOUR_EYES if required is None else {**FOUR_EYES, "requireArgsHash": required}
    async with reviewed(policy) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        before = len(EXECUTIONS)
        await act(who["alice"], APPROVE_ALL, runId=run_id)
        edited = {"path": "/tmp/elsewhere.txt"}
        await act(who["bob"], APPROVE_ALL, runId=run_id, editedArgs=edited)
        now = (await call_of(who["alice"], run_id))["argsHash"]
        again = await act(who["alice"], APPROVE_ALL, runId=run_id)
        if required is False:
            assert again["__typename"] == "RunDecided"
            assert EXECUTIONS[before:] == [("delete_file", edited)]
            return
        assert again == {
            "__typename": "StaleDecision",
            "message": again["message"],
            "argsHash": now,
        }
        assert "expectedArgsHash" in again["message"]
        assert (await call_of(who["alice"], run_id))["status"] == "SUSPENDED"
        assert EXECUTIONS[before:] == []
        seen = await act(who["alice"], APPROVE_ALL, runId=run_id, expectedArgsHash=now)
        assert seen["__typename"] == "RunDecided"
        assert EXECUTIONS[before:] == [("delete_file", edited)]


CONFIRM = """query($id: ID!) { agentRun(runId: $id) { toolCalls { toolName confirmApproval } } }"""


async def confirms(gql: Gql, run_id: str) -> list[tuple[str, bool]]:
    run = (await gql(CONFIRM, {"id": run_id}))["data"]["agentRun"]
    return [(call["toolName"], call["confirmApproval"]) for call in run["toolCalls"]]


async def test_approvals_ask_to_be_confirmed_of_destructive_tools_or_all_if_set(
    reviewed: Callable[..., Any],
) -> None:
    destructive = {"agentId": "*", "toolName": "delete_file", "destructive": True}
    async with reviewed(destructive) as who:
        cleaner = (await start(who["starter"], "file-cleaner"))["runId"]
        asker = (await start(who["starter"], "city-asker"))["runId"]
        assert await confirms(who["bob"], cleaner) == [("delete_file", True)]
        assert await confirms(who["bob"], asker) == [("ask_city", False)]  # a suspension
        await act(who["bob"], APPROVE, runId=cleaner)
        assert await confirms(who["bob"], cleaner) == [("delete_file", False)]  # decided
    async with reviewed(confirm_every_approval=True) as who:
        cleaner = (await start(who["starter"], "file-cleaner"))["runId"]
        assert await confirms(who["bob"], cleaner) == [("delete_file", True)]
    async with reviewed() as who:
        cleaner = (await start(who["starter"], "file-cleaner"))["runId"]
        assert await confirms(who["bob"], cleaner) == [("delete_file", False)]
