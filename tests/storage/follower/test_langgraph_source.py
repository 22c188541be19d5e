"""LangGraph threads, checkpointed by a real `MongoDBSaver` from real `langgraph` and
`langchain` graphs, are listed as runs over GraphQL: each interrupt shape, what moves a
run on, and what deletes it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.mongodb import MongoDBSaver
from pymongo import AsyncMongoClient

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server import Settings, create_app
from suspended_runs.storage import FOLLOWER_STATE_COLLECTION, Document
from tests import langgraph_graphs as graphs
from tests.helpers import AGENT_RUNS as RUNS
from tests.helpers import RESUME as RESUME_RUN
from tests.helpers import Gql, act, eventually, make_gql, running_app
from tests.helpers import agent_runs as listed
from tests.langgraph_documents import Threads, checkpoint
from tests.webhook_receiver import Receiver

HOOK = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""
RUN = """query($id: ID!) { agentRun(runId: $id) { runId status error
  toolCalls { toolCallId } messages(last: 10) { role text toolCalls { toolName args } } } }"""


@pytest.fixture
async def lg_gql(langgraph_db: str, settings: Settings, start_app: Any) -> Gql:
    # langgraph_db first: its database is dropped after the app stopped following it.
    client = await start_app(
        settings.model_copy(
            update={"langgraph_db": langgraph_db, "review_starter_context_key": "started_by"}
        )
    )
    return make_gql(client)


async def test_a_batched_approval_is_listed_with_the_models_call_ids(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    agent = graphs.refund_agent(checkpointer)
    config = graphs.thread(user_id="customer-7", started_by="key:alice")
    await asyncio.to_thread(graphs.ask_refund, agent, config)
    [run] = await listed(lg_gql, "refunds")
    thread_id = config["configurable"]["thread_id"]
    assert run["runId"].startswith(f"lg:{thread_id}:")
    assert (run["runtime"], run["status"]) == ("LANGGRAPH", "SUSPENDED")
    assert (run["threadId"], run["resourceId"], run["startedBy"]) == (
        thread_id,
        "customer-7",
        "key:alice",
    )
    assert run["problems"] == []
    assert run["continuable"] is False
    assert "LangGraph" in run["notContinuableReason"]
    refund, email = run["toolCalls"]
    assert refund["toolCallId"].startswith("call_refund_")
    assert (refund["toolName"], refund["args"]) == (
        "issue_refund",
        {"order": "A-1", "amount": 12.5},
    )
    assert refund["requiresApproval"] is True
    assert refund["suspendPayload"]["allowedDecisions"] == ["approve", "edit", "reject", "respond"]
    assert email["toolCallId"].startswith("call_email_")
    assert email["suspendPayload"]["allowedDecisions"] == ["approve", "reject"]
    assert run["createdAt"] < run["suspendedAt"]
    body = await lg_gql(RUN, {"id": run["runId"]})
    messages = body["data"]["agentRun"]["messages"]
    assert messages[0] == {"role": "USER", "text": "Refund order A-1", "toolCalls": []}
    assert [c["toolName"] for c in messages[-1]["toolCalls"]] == ["issue_refund", "send_email"]


async def test_per_call_approvals_are_one_call_each_and_a_partial_answer_leaves_the_other(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    agent = graphs.refund_agent(checkpointer, per_call=True)
    config = graphs.thread()
    result = await asyncio.to_thread(graphs.ask_refund, agent, config)

    async def both_asked() -> bool:
        runs = (await lg_gql(RUNS, {"agent": "refunds"}))["data"]["suspendedRuns"]["runs"]
        calls = [c["toolCallId"] for run in runs for c in run["toolCalls"]]
        return [c.rsplit("_", 1)[0] for c in calls] == ["call_refund", "call_email"]

    await eventually(both_asked, within=5)  # two tasks, each its interrupt: in model order
    [run] = await listed(lg_gql, "refunds")
    assert run["toolCalls"][1]["suspendPayload"]["allowedDecisions"] == ["approve", "reject"]
    # The owner's process answers the refund itself: the email still waits, in the same run.
    refund = next(i for i in result["__interrupt__"] if i.value["name"] == "issue_refund")
    await asyncio.to_thread(graphs.resume, agent, config, {refund.id: {"type": "approve"}})

    async def one_left() -> bool:
        [now] = (await lg_gql(RUNS, {"agent": "refunds"}))["data"]["suspendedRuns"]["runs"]
        return [c["toolCallId"][:10] for c in now["toolCalls"]] == ["call_email"]

    await eventually(one_left, within=5)
    [after] = await listed(lg_gql, "refunds")
    assert after["runId"] == run["runId"]
    assert after["suspendedAt"] > run["suspendedAt"]


async def test_a_node_that_asks_twice_is_one_run_suspended_again(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    graph = graphs.two_questions(checkpointer)
    config = graphs.thread(agent_id="questions")
    await asyncio.to_thread(graph.invoke, {"topic": "refunds"}, config)
    [run] = await listed(lg_gql, "questions")
    [call] = run["toolCalls"]
    assert (call["toolName"], call["requiresApproval"]) == ("ask", False)
    assert call["suspendPayload"] == {"question": "Which customer?"}
    await asyncio.to_thread(graphs.resume, graph, config, "Ada")

    async def asked_again() -> bool:
        [now] = (await lg_gql(RUNS, {"agent": "questions"}))["data"]["suspendedRuns"]["runs"]
        return bool(now["toolCalls"][0]["suspendPayload"] == {"question": "Which order?"})

    await eventually(asked_again, within=5)
    [again] = await listed(lg_gql, "questions")
    assert again["runId"] == run["runId"]
    assert again["toolCalls"][0]["toolCallId"] != call["toolCallId"]


async def test_an_agent_inbox_interrupt_is_a_call_its_config_allows(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    graph = graphs.inbox_graph(checkpointer)
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, graphs.thread())
    [run] = await listed(lg_gql, "langgraph")  # no agent in its metadata: the default
    [call] = run["toolCalls"]
    assert (call["toolName"], call["args"], call["requiresApproval"]) == (
        "close_ticket",
        {"ticket": "T-9"},
        True,
    )
    assert call["suspendPayload"]["config"]["allow_edit"] is True


async def test_a_thread_that_moves_on_elsewhere_ends_its_run_and_a_new_invocation_is_a_new_run(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    agent = graphs.refund_agent(checkpointer)
    config = graphs.thread()
    await asyncio.to_thread(graphs.ask_refund, agent, config)
    [first] = await listed(lg_gql, "refunds")
    decisions = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}
    await asyncio.to_thread(graphs.resume, agent, config, decisions)
    await listed(lg_gql, "refunds", count=0)
    body = await lg_gql(RUN, {"id": first["runId"]})
    assert body["data"]["agentRun"]["status"] == "ENDED"
    again = graphs.refund_agent(checkpointer)
    await asyncio.to_thread(graphs.ask_refund, again, config)
    [second] = await listed(lg_gql, "refunds")
    assert second["runId"] != first["runId"]
    assert second["threadId"] == first["threadId"]


async def test_a_deleted_thread_ends_its_run_with_the_reason(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    agent = graphs.refund_agent(checkpointer)
    config = graphs.thread()
    await asyncio.to_thread(graphs.ask_refund, agent, config)
    [run] = await listed(lg_gql, "refunds")
    await asyncio.to_thread(checkpointer.delete_thread, config["configurable"]["thread_id"])
    await listed(lg_gql, "refunds", count=0)
    body = await lg_gql(RUN, {"id": run["runId"]})
    assert body["data"]["agentRun"]["status"] == "ENDED"
    assert "deleted" in body["data"]["agentRun"]["error"]


async def test_a_restart_resumes_both_streams_and_lists_what_was_written_meanwhile(
    langgraph_db: str, settings: Settings, mongo_uri: str
) -> None:
    with_threads = settings.model_copy(update={"langgraph_db": langgraph_db})
    threads = Threads(mongo_uri, langgraph_db)
    try:
        async with running_app(with_threads) as client:
            threads.suspended("before", agent_id="restarts")
            await listed(make_gql(client), "restarts")
        saved = await positions(mongo_uri, settings.mongodb_db)
        assert set(saved) == {"langgraph-checkpoints-stream", "langgraph-writes-stream"}
        threads.suspended("while-down", agent_id="restarts")
        async with running_app(with_threads) as client:  # ready: caught up
            gql = make_gql(client)
            found = await gql(RUNS, {"agent": "restarts"})
            assert found["data"]["suspendedRuns"]["total"] == 2
            # A reconcile of the snapshots leaves the threads' runs as they are.
            reconciled = await gql("mutation { reconcileRuns { ... on RunsReconciled { ended } } }")
            assert reconciled["data"]["reconcileRuns"]["ended"] == 0
            again = await gql(RUNS, {"agent": "restarts"})
            assert again["data"]["suspendedRuns"]["runs"] == found["data"]["suspendedRuns"]["runs"]
    finally:
        threads.close()


async def test_polling_lists_moves_on_and_ends_a_deleted_thread(
    langgraph_db: str, settings: Settings, start_app: Any, checkpointer: MongoDBSaver
) -> None:
    polled = settings.model_copy(update={"langgraph_db": langgraph_db, "sync_mode": "poll"})
    gql = make_gql(await start_app(polled))
    graph = graphs.two_questions(checkpointer)
    config = graphs.thread(agent_id="polled")
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, config)
    [run] = await listed(gql, "polled")
    await asyncio.to_thread(graphs.resume, graph, config, "Ada")
    await asyncio.to_thread(graphs.resume, graph, config, "A-1")  # the thread completes
    await listed(gql, "polled", count=0)
    second = graphs.thread(agent_id="polled")
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, second)
    [other] = await listed(gql, "polled")
    await asyncio.to_thread(checkpointer.delete_thread, second["configurable"]["thread_id"])
    await listed(gql, "polled", count=0)
    ended = (await gql(RUN, {"id": other["runId"]}))["data"]["agentRun"]
    assert ended["status"] == "ENDED" and "deleted" in ended["error"]
    assert (await gql(RUN, {"id": run["runId"]}))["data"]["agentRun"]["status"] == "ENDED"


async def test_documents_that_cannot_be_read_never_stop_the_follower_or_break_a_page(
    lg_gql: Gql, langgraph_db: str, mongo_uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    threads = Threads(mongo_uri, langgraph_db)
    try:
        threads.db.checkpoints.insert_one(checkpoint("bad-id", "not-a-langgraph-id", None))
        threads.interrupt("bad-id", "not-a-langgraph-id", {"q": 1})
        threads.db.checkpoint_writes.insert_one(
            {"thread_id": 7, "checkpoint_ns": "", "checkpoint_id": None, "channel": "__interrupt__"}
        )
        pickled = threads.suspended("pickled", agent_id="bad-docs")
        threads.interrupt("pickled", pickled, None, raw=("pickle", b"\x80\x04."))
        aes = threads.chain("aes", 2, agent_id="bad-docs")[-1]
        threads.interrupt("aes", aes, None, raw=("msgpack+aes", b"\x00" * 48))
        threads.suspended("good", agent_id="bad-docs")
        runs = await listed(lg_gql, "bad-docs", count=3)
    finally:
        threads.close()
    by_thread = {run["threadId"]: run for run in runs}
    assert by_thread["good"]["problems"] == []
    assert by_thread["aes"]["problems"] and by_thread["pickled"]["problems"]
    assert any("malformed snapshot" in r.message for r in caplog.records)


async def test_a_decision_on_a_run_no_graph_here_resumes_is_refused_before_anything_is_written(
    lg_gql: Gql, langgraph_db: str, mongo_uri: str
) -> None:
    threads = Threads(mongo_uri, langgraph_db)
    try:
        threads.suspended("undecidable", agent_id="nobody")
        [run] = await listed(lg_gql, "nobody")
        writes_before = threads.db.checkpoint_writes.count_documents({})
        answer = await act(
            lg_gql,
            RESUME_RUN,
            runId=run["runId"],
            toolCallId=run["toolCalls"][0]["toolCallId"],
            resumeData="x",
        )
        assert answer["__typename"] == "ExecutorUnavailable"
        assert threads.db.checkpoint_writes.count_documents({}) == writes_before
    finally:
        threads.close()


async def test_a_webhook_hears_a_langgraph_run_suspend_and_end(
    lg_gql: Gql, checkpointer: MongoDBSaver
) -> None:
    with Receiver() as receiver:
        made = await lg_gql(
            HOOK, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED", "RUN_SETTLED"]}}
        )
        secret = made["data"]["createWebhook"]["secret"]
        await asyncio.sleep(1.1)  # an instance learns of a new webhook within a second
        graph = graphs.two_questions(checkpointer)
        config = graphs.thread(agent_id="heard")
        await asyncio.to_thread(graph.invoke, {"topic": "t"}, config)
        [first] = await listed(lg_gql, "heard")
        await asyncio.to_thread(graphs.resume, graph, config, "Ada")

        async def asked_again() -> bool:
            runs = await listed(lg_gql, "heard")
            return bool(runs[0]["suspendedAt"] != first["suspendedAt"])

        await eventually(asked_again, within=5)
        await asyncio.to_thread(graphs.resume, graph, config, "A-1")

        async def heard() -> bool:
            return len(receiver.events(secret)) >= 3

        await eventually(heard, within=15)
    kinds = [(e["type"], e["data"]["run"]["runtime"]) for e in receiver.events(secret)]
    assert kinds == [
        ("run.suspended", "LANGGRAPH"),
        ("run.suspended", "LANGGRAPH"),
        ("run.settled", "LANGGRAPH"),
    ]


def test_an_agent_id_of_two_runtimes_stops_the_start(settings: Settings) -> None:
    clash = settings.model_copy(
        update={"langgraph_db": "x", "langgraph_default_agent": "file-cleaner"}
    )
    with pytest.raises(ConfigurationError, match="LANGGRAPH_DEFAULT_AGENT"):
        create_app(clash)


async def positions(mongo_uri: str, database: str) -> list[str]:
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_uri)
    try:
        state = client[database][FOLLOWER_STATE_COLLECTION]
        return [
            d["_id"]
            async for d in state.find({"resumeToken": {"$exists": True}})
            if str(d["_id"]).startswith("langgraph")
        ]
    finally:
        await client.close()
