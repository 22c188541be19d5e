"""The normalized caches of real GraphQL clients work with this server out of the box:
Apollo Client (`relayStylePagination`, an answer's run updating its list entry), urql's
Graphcache (`relayPagination`, `updates`) and Relay without React (`relay-compiler`
validating a `@connection` and a `@refetchable` fragment against schema/schema.graphql,
`fetchQuery` paging, `node` refetching, `@deleteEdge`). The scripts are in
tests/graphql_clients; each prints what its client holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from suspended_runs.server import Settings
from tests.helpers import ThreadedServer, node_client

RUNS = 3
START = """mutation($p: String!) { startRun(input: {agentId: "file-cleaner", prompt: $p}) {
  ... on RunStarted { run { runId } } } }"""


@pytest.fixture
def served(settings: Settings) -> Iterator[tuple[str, list[str]]]:
    """A server with three suspended runs of the demo approval agent; their ids, newest
    first (as the lists show them)."""
    with ThreadedServer(settings) as url:
        runs = []
        for i in range(RUNS):
            body = httpx.post(
                f"{url}/graphql", json={"query": START, "variables": {"p": f"rm /tmp/c{i}"}}
            ).json()
            runs.append(body["data"]["startRun"]["run"]["runId"])
        yield url, runs[::-1]


def test_apollo_pages_and_updates_its_list_from_answers(
    served: tuple[str, list[str]], clients_node: Path
) -> None:
    url, runs = served
    got = node_client(clients_node, "apollo_cache.mjs", f"{url}/graphql", "file-cleaner")
    assert got["firstPage"] == 2
    assert got["paged"] == [[run, "SUSPENDED"] for run in runs]
    assert got["approved"] == "RunDecided"
    # The answer's run replaced the cached entry: no request for the list was sent.
    assert got["afterApproval"] == [
        [runs[0], "COMPLETED"],
        [runs[1], "SUSPENDED"],
        [runs[2], "SUSPENDED"],
    ]
    assert got["requestsAfterPaging"] == ["Approve", "Approve", "Approve"]
    kind, run = got["lost"]
    assert kind == "RunNotSuspended" and run["status"] == "COMPLETED"
    assert got["dropped"] == [[runs[0], "COMPLETED"], [runs[2], "SUSPENDED"]]


def test_urql_graphcache_pages_and_updates_its_list_from_answers(
    served: tuple[str, list[str]], clients_node: Path
) -> None:
    url, runs = served
    got = node_client(clients_node, "urql_cache.mjs", f"{url}/graphql", "file-cleaner")
    updated, dropped = got["updated"], got["dropped"]
    assert updated["firstPage"] == 2
    assert updated["paged"] == [[run, "SUSPENDED"] for run in runs]
    assert updated["approved"] == "RunDecided"
    assert updated["cached"] == [[runs[0], "COMPLETED"], *([run, "SUSPENDED"] for run in runs[1:])]
    assert updated["requestsAfterPaging"] == ["Approve"]
    # Another client, with the docs' `updates`: the run it approves leaves its list.
    assert dropped["paged"] == [[run, "SUSPENDED"] for run in runs[1:]]
    assert dropped["approved"] == "RunDecided"
    assert dropped["cached"] == [[runs[2], "SUSPENDED"]]
    assert dropped["requestsAfterPaging"] == ["Approve"]


def test_relay_compiles_against_the_schema_pages_refetches_and_deletes_edges(
    served: tuple[str, list[str]], clients_node: Path
) -> None:
    url, runs = served
    got = node_client(clients_node, "relay.mjs", f"{url}/graphql", "file-cleaner")
    assert "compileError" not in got, got.get("compileError")
    assert got["firstPage"] == [[run, "SUSPENDED"] for run in runs[:2]]
    assert got["paged"] == [[run, "SUSPENDED"] for run in runs]
    assert not got["hasNextPage"]
    assert got["elsewhere"] == "RunDecided"
    # node(id:) refetched the run another client approved: the list entry shows it.
    assert got["refetched"] == [
        [runs[0], "COMPLETED"],
        [runs[1], "SUSPENDED"],
        [runs[2], "SUSPENDED"],
    ]
    assert got["approved"] == "RunDecided"
    assert got["afterDelete"] == [[runs[0], "COMPLETED"], [runs[2], "SUSPENDED"]]
    assert got["requests"] == [
        "inboxQuery",
        "inboxRunsPaginationQuery",
        "inboxRunRefetchQuery",
        "inboxApproveMutation",
    ]
