"""Decisions whose answer is lost, against a real Mastra server (storage/follower/settling.py,
runtime/mastra.py): the caller is told the outcome is unknown, no second decision is
forwarded, and the run is settled from its snapshot once Mastra moves it on."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Callable

from tests.helpers import (
    APPROVE,
    CANCEL,
    DECLINE,
    RELEASE,
    Server,
    act,
    eventually,
    has_status,
    make_gql,
)
from tests.mastra_peer import PEER_DB, MastraPeer, settings_for, slow_delete


async def test_a_timeout_is_outcome_unknown_and_the_tool_runs_once(
    mongo_uri: str, peer: MastraPeer, start_app
) -> None:
    gql = make_gql(await start_app(settings_for(mongo_uri, peer, mastra_timeout_seconds=2)))
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [slow_delete(path, 6)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    first = await act(gql, APPROVE, runId=run_id)
    assert first["__typename"] == "OutcomeUnknown", first
    assert (first["run"]["status"], first["run"]["outcomeUnknown"]) == ("RUNNING", True)
    for mutation in (APPROVE, DECLINE):  # nothing more is forwarded while it is in doubt
        again = await act(gql, mutation, runId=run_id)
        assert (again["__typename"], again["status"]) == ("RunNotSuspended", "RUNNING")
    await eventually(lambda: has_status(gql, run_id, "COMPLETED"), within=15)
    assert peer.executions(path) == [("slowDelete", {"path": path, "seconds": 6})]


async def test_a_peer_killed_mid_stream_leaves_the_run_in_doubt_until_released(
    mongo_uri: str, own_peer: MastraPeer, start_app
) -> None:
    own = own_peer
    settings = settings_for(mongo_uri, own, claim_lease_seconds=1)
    gql = make_gql(await start_app(settings))
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await own.start_run("approver", [slow_delete(path, 5)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    approving = asyncio.create_task(act(gql, APPROVE, runId=run_id))
    await eventually(lambda: _started_soon(own, path), within=10)
    own.kill()  # mid-stream: the tool is running
    answer = await approving
    assert answer["__typename"] == "OutcomeUnknown", answer
    await eventually(lambda: has_status(gql, run_id, "STALLED"), within=5)
    own.start()
    released = await act(gql, RELEASE, runId=run_id, reason="the peer died; retry")
    assert (released["__typename"], released["run"]["status"]) == ("RunReleased", "SUSPENDED")
    done = await act(gql, APPROVE, runId=run_id)
    assert done["run"]["status"] == "COMPLETED", done
    assert len(own.executions(path)) == 2  # the killed one had started: it ran again


async def test_cancel_declines_a_mastra_run_and_its_tool_never_runs(
    mongo_uri: str, peer: MastraPeer, start_app
) -> None:
    gql = make_gql(await start_app(settings_for(mongo_uri, peer)))
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [slow_delete(path, 0), slow_delete(path, 0)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    cancelled = await act(gql, CANCEL, runId=run_id, reason="not today")
    assert cancelled["__typename"] == "RunCancelled", cancelled
    assert (cancelled["__typename"], cancelled["run"]["status"]) == ("RunCancelled", "CANCELLED")
    assert peer.executions(path) == []
    theirs = await peer.suspended_runs("approver")
    assert run_id not in {r["runId"] for r in theirs["runs"]}  # both calls were declined


def test_a_server_killed_mid_continuation_is_settled_after_restart(
    server: Server, mongo_uri: str, peer: MastraPeer
) -> None:
    server.env.update(
        {
            "MONGODB_URI": mongo_uri,
            "MONGODB_DB": PEER_DB,
            "MASTRA_URL": peer.url,
            "CLAIM_LEASE_SECONDS": "1",
        }
    )
    server.start()
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = asyncio.run(peer.start_run("approver", [slow_delete(path, 2)]))
    _wait(lambda: _status(server, run_id) == "SUSPENDED")
    body = server.query(
        "mutation($r: ID!) { approveToolCall(input: {runId: $r, wait: false}) "
        "{ __typename ... on RunDecided { run { status } } } }",
        {"r": run_id},
    )
    assert body["data"]["approveToolCall"]["run"]["status"] == "RUNNING"
    _wait(lambda: _started(peer, path))
    assert server.signal(signal.SIGKILL) == -signal.SIGKILL
    server.start()  # Mastra finishes the run meanwhile and deletes its snapshot
    _wait(lambda: _status(server, run_id) == "COMPLETED", within=15)
    assert peer.executions(path) == [("slowDelete", {"path": path, "seconds": 2})]


def _started(peer: MastraPeer, path: str) -> bool:
    return bool(peer.executions(path))


async def _started_soon(peer: MastraPeer, path: str) -> bool:
    return _started(peer, path)


def _status(server: Server, run_id: str) -> str | None:
    run = server.query("query($r: ID!) { agentRun(runId: $r) { status } }", {"r": run_id})
    found = run["data"]["agentRun"]
    return found["status"] if found else None


def _wait(check: Callable[[], bool], within: float = 10) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.05)
