"""Decisions made here resume real LangGraph threads (`create_agent` with
`HumanInTheLoopMiddleware`, batched and per call; Agent Inbox; plain `interrupt()`), through
the graphs of LANGGRAPH_GRAPHS, once: every row of the answer table, the refusals made
before anything is written, and concurrent deciders."""

from __future__ import annotations

import asyncio
import json
import signal
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.mongodb import MongoDBSaver

from suspended_runs.server import Settings
from suspended_runs.storage import Claim, Storage
from tests import langgraph_graphs as graphs
from tests.helpers import (
    APPROVE,
    CANCEL,
    DECLINE,
    RELEASE,
    RESUME,
    ROOT,
    START,
    Gql,
    Server,
    act,
    agent_runs,
    eventually,
    make_gql,
)

EDITED = {"action": "close_ticket", "args": {"ticket": "T-1"}}
GRAPHS = {
    "refunds": "tests.langgraph_graphs:refund_agent",
    "per-call-refunds": "tests.langgraph_graphs:per_call_refunds",
    "questions": "tests.langgraph_graphs:two_questions",
    "inbox": "tests.langgraph_graphs:inbox_graph",
}
RUN = """query($id: ID!) { agentRun(runId: $id) { runId status output error continuable
  toolCalls { toolCallId toolName decision { action } }
  messages(last: 20) { role text } } }"""


def lg_settings(settings: Settings, langgraph_db: str, **more: Any) -> Settings:
    return settings.model_copy(
        update={"langgraph_db": langgraph_db, "langgraph_graphs": GRAPHS, **more}
    )


@pytest.fixture
async def gql(langgraph_db: str, settings: Settings, start_app: Any) -> Gql:
    graphs.RAN.clear()
    return make_gql(await start_app(lg_settings(settings, langgraph_db)))


async def run_of(gql: Gql, run_id: str) -> dict[str, Any]:
    body = await gql(RUN, {"id": run_id})
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]["agentRun"]
    return found


async def refund_run(gql: Gql, agent: str = "refunds") -> dict[str, Any]:
    """A run of a refund agent started here, waiting on its two calls."""
    started = await act(gql, START, agentId=agent, prompt="Refund order A-1", resourceId="u-1")
    assert started["__typename"] == "RunStarted", started
    run: dict[str, Any] = started["run"]
    assert run["status"] == "SUSPENDED" and len(run["toolCalls"]) == 2, run
    return run


def calls(run: dict[str, Any]) -> tuple[str, str]:
    refund, email = (c["toolCallId"] for c in run["toolCalls"])
    return refund, email


async def test_a_batch_is_answered_once_its_every_call_is_decided(gql: Gql) -> None:
    run = await refund_run(gql)
    assert (await run_of(gql, run["runId"]))["continuable"] is True
    refund, email = calls(run)
    first = await act(gql, APPROVE, runId=run["runId"], toolCallId=refund)
    assert first["__typename"] == "RunDecided" and first["run"]["status"] == "SUSPENDED"
    assert graphs.RAN == []  # the batch waits for its other call
    last = await act(gql, DECLINE, runId=run["runId"], toolCallId=email, reason="not now")
    assert (last["__typename"], last["run"]["status"]) == ("RunDecided", "COMPLETED")
    assert last["run"]["output"] == "done"
    assert graphs.RAN == [("issue_refund", {"order": "A-1", "amount": 12.5})]
    texts = [m["text"] for m in (await run_of(gql, run["runId"]))["messages"]]
    assert any("with reason: not now" in (t or "") for t in texts), texts


async def test_edited_arguments_run_checked_and_refused_before_anything_is_written(
    gql: Gql, checkpointer: MongoDBSaver
) -> None:
    run = await refund_run(gql)
    refund, email = calls(run)
    writes = checkpointer.writes_collection.count_documents({})
    bad = await act(gql, APPROVE, runId=run["runId"], toolCallId=refund, editedArgs={"amount": "x"})
    assert bad["__typename"] == "InvalidArgs", bad
    no_edit = await act(gql, APPROVE, runId=run["runId"], toolCallId=email, editedArgs={"to": "b"})
    assert no_edit["__typename"] == "ArgsNotEditable", no_edit
    assert checkpointer.writes_collection.count_documents({}) == writes
    edited = {"order": "A-1", "amount": 5.0}
    await act(gql, APPROVE, runId=run["runId"], toolCallId=refund, editedArgs=edited)
    done = await act(gql, APPROVE, runId=run["runId"], toolCallId=email)
    assert done["run"]["status"] == "COMPLETED", done
    email_args = {"to": "a@example.com", "body": "hi"}
    assert len(graphs.RAN) == 2  # the two tools run side by side: in either order
    assert dict(graphs.RAN) == {"issue_refund": edited, "send_email": email_args}


async def test_resume_data_answers_a_call_that_allows_a_response(gql: Gql) -> None:
    run = await refund_run(gql)
    refund, email = calls(run)
    not_text = await act(gql, RESUME, runId=run["runId"], toolCallId=refund, resumeData={"a": 1})
    assert not_text["__typename"] == "InvalidResumeData", not_text
    wrong = await act(gql, RESUME, runId=run["runId"], toolCallId=email, resumeData="hi")
    assert wrong["__typename"] == "WrongSuspensionKind", wrong  # email: approve or reject
    await act(gql, RESUME, runId=run["runId"], toolCallId=refund, resumeData="Refunded by hand.")
    done = await act(gql, APPROVE, runId=run["runId"], toolCallId=email)
    assert done["run"]["status"] == "COMPLETED"
    assert [name for name, _ in graphs.RAN] == ["send_email"]  # the refund was answered


async def test_a_per_call_interrupt_is_answered_alone_and_its_sibling_waits_on(gql: Gql) -> None:
    run = await refund_run(gql, "per-call-refunds")
    refund, email = calls(run)
    first = await act(gql, APPROVE, runId=run["runId"], toolCallId=refund)
    assert first["run"]["status"] == "SUSPENDED", first
    assert [c["toolCallId"] for c in first["run"]["toolCalls"]] == [email]
    assert [name for name, _ in graphs.RAN] == ["issue_refund"]
    last = await act(gql, DECLINE, runId=run["runId"], toolCallId=email, reason="no")
    assert last["run"]["status"] == "COMPLETED", last
    assert [name for name, _ in graphs.RAN] == ["issue_refund"]


async def test_a_plain_interrupt_takes_data_asked_twice_in_one_run(
    gql: Gql, checkpointer: MongoDBSaver
) -> None:
    graph = graphs.two_questions(checkpointer)
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, graphs.thread(agent_id="questions"))
    [run] = await agent_runs(gql, "questions")
    call = run["toolCalls"][0]["toolCallId"]
    refused = await act(gql, APPROVE, runId=run["runId"], toolCallId=call)
    assert refused["__typename"] == "WrongSuspensionKind", refused
    again = await act(gql, RESUME, runId=run["runId"], toolCallId=call, resumeData="Ada")
    assert again["run"]["status"] == "SUSPENDED" and again["run"]["runId"] == run["runId"]
    second = again["run"]["toolCalls"][0]
    assert second["toolCallId"] != call and second["suspendPayload"] == {"question": "Which order?"}
    done = await act(
        gql, RESUME, runId=run["runId"], toolCallId=second["toolCallId"], resumeData="A-1"
    )
    assert done["run"]["status"] == "COMPLETED", done
    assert done["run"]["output"] == {"topic": "t", "first": "Ada", "second": "A-1"}


@pytest.mark.parametrize(
    ("decision", "extra", "answer"),
    [
        (APPROVE, {}, {"type": "accept", "args": None}),
        (APPROVE, {"editedArgs": {"ticket": "T-1"}}, {"type": "edit", "args": EDITED}),
        (DECLINE, {"reason": "keep it"}, {"type": "ignore", "args": None}),
    ],
)  # fmt: skip
async def test_an_agent_inbox_request_gets_its_answer_in_a_list(
    gql: Gql, checkpointer: MongoDBSaver, decision: str, extra: dict[str, Any], answer: Any
) -> None:
    graph = graphs.inbox_graph(checkpointer)
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, graphs.thread(agent_id="inbox"))
    [run] = await agent_runs(gql, "inbox")
    call = run["toolCalls"][0]["toolCallId"]
    done = await act(gql, decision, runId=run["runId"], toolCallId=call, **extra)
    assert done["run"]["status"] == "COMPLETED", done
    assert done["run"]["output"]["first"] == [answer]


async def test_start_run_takes_a_message_graph_and_refuses_others(gql: Gql) -> None:
    run = await refund_run(gql)
    assert run["runId"].startswith("lg:thread-")
    other = await act(gql, START, agentId="questions", prompt="x")
    assert other["__typename"] == "ExecutorUnavailable", other


async def test_forty_concurrent_approvals_of_a_batch_run_each_tool_once(gql: Gql) -> None:
    run = await refund_run(gql)
    refund, email = calls(run)
    tries = [refund, email] * 20
    answers = await asyncio.gather(
        *(act(gql, APPROVE, runId=run["runId"], toolCallId=call) for call in tries)
    )
    kinds = Counter(a["__typename"] for a in answers)
    assert kinds["RunDecided"] == 2, kinds
    assert Counter(name for name, _ in graphs.RAN) == {"issue_refund": 1, "send_email": 1}
    assert (await run_of(gql, run["runId"]))["status"] == "COMPLETED"


async def test_two_instances_deciding_at_once_run_each_tool_once(
    langgraph_db: str, settings: Settings, start_app: Any
) -> None:
    graphs.RAN.clear()
    one = make_gql(await start_app(lg_settings(settings, langgraph_db)))
    two = make_gql(await start_app(lg_settings(settings, langgraph_db)))
    run = await refund_run(one)
    refund, email = calls(run)
    await act(one, APPROVE, runId=run["runId"], toolCallId=refund)
    answers = await asyncio.gather(
        *(act(gql, APPROVE, runId=run["runId"], toolCallId=email) for gql in (one, two) * 5)
    )
    assert Counter(a["__typename"] for a in answers)["RunDecided"] == 1
    assert Counter(name for name, _ in graphs.RAN) == {"issue_refund": 1, "send_email": 1}


async def test_an_answer_the_graph_fails_on_ends_the_run_failed_not_offered_again(
    gql: Gql, checkpointer: MongoDBSaver
) -> None:
    graph = graphs.two_questions(checkpointer)
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, graphs.thread(agent_id="questions"))
    [run] = await agent_runs(gql, "questions")
    call = run["toolCalls"][0]["toolCallId"]
    failed = await act(gql, RESUME, runId=run["runId"], toolCallId=call, resumeData="boom")
    assert failed["run"]["status"] == "FAILED", failed
    error = failed["run"]["error"] or ""
    assert error.startswith("ValueError") and "boom" not in error  # its text: the thread's
    again = await act(gql, RESUME, runId=run["runId"], toolCallId=call, resumeData="Ada")
    assert again["__typename"] == "RunNotSuspended", again


async def test_a_claimed_run_whose_thread_moved_on_is_settled_from_its_documents(
    langgraph_db: str,
    settings: Settings,
    start_app: Any,
    checkpointer: MongoDBSaver,
    mongo_uri: str,
) -> None:
    gql = make_gql(await start_app(lg_settings(settings, langgraph_db, claim_lease_seconds=0.5)))
    graph = graphs.two_questions(checkpointer)
    config = graphs.thread(agent_id="questions")
    await asyncio.to_thread(graph.invoke, {"topic": "t"}, config)
    [run] = await agent_runs(gql, "questions")
    storage = Storage.open(mongo_uri, settings.mongodb_db, retention=timedelta(days=1))
    try:
        entry = await storage.runs.get(run["runId"])
        assert entry is not None and entry.suspended_at is not None
        died = Claim("a-process-that-died", entry.suspended_at, entry.suspended_at)
        assert await storage.runs.claims.take_over(entry, died)  # claimed, its lease run out
    finally:
        await storage.close()
    assert (await run_of(gql, run["runId"]))["status"] == "STALLED"
    # The answer reached the thread before the process died: the thread asks again.
    await asyncio.to_thread(graphs.resume, graph, config, "Ada")

    async def settled() -> bool:
        return bool((await run_of(gql, run["runId"]))["status"] == "SUSPENDED")

    await eventually(settled, within=10)
    second = (await run_of(gql, run["runId"]))["toolCalls"][0]
    assert second["toolCallId"] != run["toolCalls"][0]["toolCallId"]


async def test_runs_killed_before_and_during_their_resume_run_no_tool_twice(
    server: Server, mongo_uri: str, langgraph_db: str, db: Any, tmp_path: Path
) -> None:
    ran = tmp_path / "ran.jsonl"
    server.env.update(
        {
            "MONGODB_URI": mongo_uri,
            "MONGODB_DB": db.name,
            "LANGGRAPH_DB": langgraph_db,
            "LANGGRAPH_GRAPHS": json.dumps({"refunds": GRAPHS["refunds"]}),
            "LANGGRAPH_RESUME_THREADS": "1",  # the second resume waits for the first's thread
            "TOOLS_RAN_FILE": str(ran),
            "TOOL_SECONDS": "60",
            "CLAIM_LEASE_SECONDS": "1",
            "PYTHONPATH": str(ROOT),
        }
    )
    runs = await killed_while_resuming(server)
    server.env["TOOL_SECONDS"] = "0"
    server.start()
    for run_id in runs:
        await until_status(server, run_id, "STALLED")
    cancelled = sync_act(server, CANCEL, runId=runs[0], reason="the refund may have gone out")
    assert cancelled["run"]["status"] == "CANCELLED", cancelled
    released = sync_act(server, RELEASE, runId=runs[1], reason="its resume never started")
    assert released["run"]["status"] == "SUSPENDED", released
    assert [c["decision"] for c in released["run"]["toolCalls"]] == [None, None]
    for call in calls(released["run"]):
        done = sync_act(server, APPROVE, runId=runs[1], toolCallId=call)
    assert done["run"]["status"] == "COMPLETED", done
    threads = [run_id.split(":")[1] for run_id in runs]
    lines = [json.loads(line) for line in ran.read_text().splitlines()]
    by_run = [Counter(r["tool"] for r in lines if r["thread"] == thread) for thread in threads]
    # The killed resume's email had run beside its refund; the released run's ran once each.
    assert by_run == [{"send_email": 1}, {"issue_refund": 1, "send_email": 1}]


async def killed_while_resuming(server: Server) -> list[str]:
    """Two refund runs decided, their resumes on the one graph thread; the server killed
    while the first runs its refund and the second waits, claimed. The runs' ids."""
    server.start()
    started = [sync_act(server, START, agentId="refunds", prompt="Refund A-1") for _ in "12"]
    runs = [one["run"]["runId"] for one in started]
    for one in started:  # the refunds approved, then the emails: each batch answered at once
        refund, email = calls(one["run"])
        sync_act(server, APPROVE, runId=one["run"]["runId"], toolCallId=refund)
    for one in started:
        email = calls(one["run"])[1]
        decided = sync_act(server, APPROVE, runId=one["run"]["runId"], toolCallId=email, wait=False)
        assert decided["run"]["status"] == "RUNNING", decided
    await asyncio.sleep(1.0)  # the first resume runs its refund (60 s); the second waits
    assert server.signal(signal.SIGKILL) == -9
    return runs


def sync_act(server: Server, mutation: str, **input_: Any) -> dict[str, Any]:
    body = server.query(mutation, {"input": input_})
    assert "errors" not in body, body
    result: dict[str, Any] = next(iter(body["data"].values()))
    return result


async def until_status(server: Server, run_id: str, status: str) -> None:
    async def reached() -> bool:
        return bool(server.query(RUN, {"id": run_id})["data"]["agentRun"]["status"] == status)

    await eventually(reached, within=15)
