"""releaseRun and cancelRun (resolvers/operators.py), on runs left STALLED by a real
`kill -9` of the server while their approved tool ran."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path
from typing import Any

from tests.helpers import APPROVE, CANCEL, RELEASE, START, Gql, Server, start_run
from tests.helpers import act as act_gql
from tests.slow_agents import executions

STATUS = "query($id: ID!) { agentRun(runId: $id) { status outcomeUnknown } }"
LOG = "query($id: ID!) { decisionLog(runId: $id) { action decidedBy reason outcome } }"


def act(server: Server, mutation: str, **input_: Any) -> dict[str, Any]:
    body = server.query(mutation, {"input": input_})
    assert "errors" not in body, body
    result: dict[str, Any] = next(iter(body["data"].values()))
    return result


def wait_for_status(server: Server, run_id: str, status: str, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while (run := server.query(STATUS, {"id": run_id})["data"]["agentRun"])["status"] != status:
        assert time.monotonic() < deadline, run
        time.sleep(0.1)


def slow_server(server: Server, mongo_uri: str, log: Path) -> Server:
    server.env.update(
        {
            "MONGODB_URI": mongo_uri,
            "MONGODB_DB": f"ops_{uuid.uuid4().hex[:8]}",
            "AGENTS": "tests.slow_agents:agents",
            "SLOW_AGENT_LOG": str(log),
            "CLAIM_LEASE_SECONDS": "1",
        }
    )
    return server


def test_runs_killed_mid_continuation_are_stalled_then_cancelled_or_released(
    server: Server, mongo_uri: str, tmp_path: Path
) -> None:
    log = tmp_path / "executions.jsonl"
    paths, runs = _killed_mid_continuation(slow_server(server, mongo_uri, log), log)

    server.start()
    for run_id in runs:  # their lease (1 s) ran out with nobody renewing it
        wait_for_status(server, run_id, "STALLED")
        again = act(server, APPROVE, runId=run_id)
        assert (again["__typename"], again["status"]) == ("RunNotSuspended", "STALLED")

    cancelled = act(server, CANCEL, runId=runs[0], reason="the file is gone anyway")
    assert (cancelled["__typename"], cancelled["run"]["status"]) == ("RunCancelled", "CANCELLED")
    assert act(server, RELEASE, runId=runs[0])["__typename"] == "WrongRunStatus"

    released = act(server, RELEASE, runId=runs[1], reason="checked: the file is still there")
    assert (released["__typename"], released["run"]["status"]) == ("RunReleased", "SUSPENDED")
    assert [c["decision"] for c in released["run"]["toolCalls"]] == [None]
    done = act(server, APPROVE, runId=runs[1])
    assert (done["__typename"], done["run"]["status"]) == ("RunDecided", "COMPLETED")

    assert [executions(log, path) for path in paths] == [1, 2]  # the released one ran again
    audit = server.query(LOG, {"id": runs[1]})["data"]["decisionLog"]
    assert [(r["action"], r["outcome"]) for r in audit] == [
        ("APPROVE", "Applied"),  # its answer was lost with the process
        ("APPROVE", "RunNotSuspended"),
        ("RELEASE", "RunReleased"),
        ("APPROVE", "RunDecided"),
    ]
    assert audit[2]["reason"] == "checked: the file is still there"


def _killed_mid_continuation(server: Server, log: Path) -> tuple[list[str], list[str]]:
    """Two runs approved with wait: false, and the server killed while their tools run."""
    server.start()
    paths = [f"/tmp/{uuid.uuid4().hex}" for _ in range(2)]
    runs = [
        act(server, START, agentId="slow", prompt=f"sleep 5 {path}")["run"]["runId"]
        for path in paths
    ]
    for run_id in runs:
        assert act(server, APPROVE, runId=run_id, wait=False)["run"]["status"] == "RUNNING"
    deadline = time.monotonic() + 10
    while not all(executions(log, path) for path in paths):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert server.signal(signal.SIGKILL) == -signal.SIGKILL  # both tools are mid-way
    return paths, runs


def test_operator_actions_need_their_roles_and_the_right_state(
    server: Server, mongo_uri: str, tmp_path: Path
) -> None:
    slow_server(server, mongo_uri, tmp_path / "executions.jsonl").start()
    run_id = act(server, START, agentId="slow", prompt="sleep 0 /tmp/x")["run"]["runId"]
    refused = act(server, RELEASE, runId=run_id)  # SUSPENDED: nothing to release
    assert (refused["__typename"], refused["status"]) == ("WrongRunStatus", "SUSPENDED")
    assert act(server, RELEASE, runId="nope")["__typename"] == "RunNotFound"
    cancelled = act(server, CANCEL, runId=run_id)
    assert cancelled["run"]["status"] == "CANCELLED"
    gone = act(server, APPROVE, runId=run_id)
    assert (gone["__typename"], gone["status"]) == ("RunNotSuspended", "CANCELLED")
    listed = server.query("{ suspendedRuns { total } }")["data"]["suspendedRuns"]["total"]
    assert listed == 0


async def test_a_cancel_takes_the_run_as_it_is_now_when_it_moved_on_meanwhile(
    gql: Gql, db, monkeypatch
) -> None:
    """Between the read and the claim the entry got a new version (Mastra writes a snapshot
    twice as it suspends, and the follower applies both): still cancellable, so cancelled,
    not "look again". A run that keeps changing is refused after a few tries."""
    from suspended_runs.storage import RUNS_COLLECTION
    from suspended_runs.storage.index.claims import ClaimWrites

    run = await start_run(gql, "file-cleaner")
    take_over = ClaimWrites.take_over
    calls: list[int] = []

    async def moved_on_first(self: ClaimWrites, seen: Any, claim: Any) -> bool:
        calls.append(seen.version)
        if len(calls) == 1:
            await db[RUNS_COLLECTION].update_one({"runId": seen.run_id}, {"$inc": {"version": 1}})
        return await take_over(self, seen, claim)

    monkeypatch.setattr(ClaimWrites, "take_over", moved_on_first)
    cancelled = await act_gql(gql, CANCEL, runId=run["runId"], reason="no")
    assert cancelled["__typename"] == "RunCancelled", cancelled
    assert calls == [calls[0], calls[0] + 1]

    other = await start_run(gql, "file-cleaner")

    async def always_moved_on(self: ClaimWrites, seen: Any, claim: Any) -> bool:
        await db[RUNS_COLLECTION].update_one({"runId": seen.run_id}, {"$inc": {"version": 1}})
        return await take_over(self, seen, claim)

    monkeypatch.setattr(ClaimWrites, "take_over", always_moved_on)
    refused = await act_gql(gql, CANCEL, runId=other["runId"], reason="no")
    assert refused["__typename"] == "WrongRunStatus" and refused["status"] == "SUSPENDED"
