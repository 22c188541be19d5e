"""The contract (schema/schema.py): the committed SDL, the public names, the request limits."""

from __future__ import annotations

import importlib

import pytest

from suspended_runs.schema import build_schema
from tests.helpers import ROOT

SDL = ROOT / "schema" / "schema.graphql"


def test_committed_schema_graphql_matches_the_code() -> None:
    exported = build_schema().as_str() + "\n"
    assert SDL.read_text() == exported, (
        "schema.graphql is stale: run `suspended-runs export-schema --output schema/schema.graphql`"
    )


@pytest.mark.parametrize("package", ["schema", "resolvers", "storage", "server"])
def test_each_layer_says_what_it_offers(package: str) -> None:
    module = importlib.import_module(package)
    public = sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, type(importlib))
    )
    # Its order is ruff's (RUF022); its content is exactly what the package exposes.
    assert sorted(module.__all__) == public


def test_contract_names_are_there() -> None:
    sdl = SDL.read_text()
    for name in (
        "type AgentRun implements Node {",
        "type AgentRunToolCall implements Node {",
        "type DecisionRecord implements Node {",
        "interface Node {",
        "node(id: ID!): Node",
        "nodes(ids: [ID!]!): [Node]!",
        "suspendedRunsConnection(filter: SuspendedRunsFilter",
        "runsConnection(filter: RunsFilter",
        "decisionLogConnection(runId: ID!",
        "webhookDeliveriesConnection(webhookId: ID!",
        "type AgentRunConnection {",
        "type PageInfo {",
        "type AlreadyDecided implements Problem {",
        "input SuspendedRunsFilter {",
        "type SuspendedRunsPage {",
        "suspendedRuns(filter: SuspendedRunsFilter",
        "agentRun(runId: ID!): AgentRun",
        "scalar DateTime",
        "scalar JSON",
    ):
        assert name in sdl


async def test_depth_limit(gql) -> None:
    deep = "{ suspendedRuns { runs { toolCalls { toolName } } } }"
    assert "errors" not in await gql(deep)
    schema = build_schema(limits=__import__("schema").Limits(max_depth=2))
    result = await schema.execute(deep)
    assert result.errors and "exceeds maximum operation depth" in result.errors[0].message


async def test_too_many_tokens_is_refused(gql) -> None:
    huge = "{ suspendedRuns { " + "hasMore " * 2100 + "} }"
    body = await gql(huge)
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    assert "token" in body["errors"][0]["message"].lower()


async def test_too_many_aliases_is_refused(gql) -> None:
    aliases = " ".join(f"a{i}: hasMore" for i in range(31))
    body = await gql(f"{{ suspendedRuns {{ {aliases} }} }}")
    [error] = body["errors"]
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert "aliases" in error["message"]


async def test_queries_over_get_work_and_mutations_over_get_do_not(client) -> None:
    ok = await client.get("/graphql", params={"query": "{ suspendedRuns { total } }"})
    assert ok.status_code == 200
    assert ok.json() == {"data": {"suspendedRuns": {"total": 0}}}
    refused = await client.get("/graphql", params={"query": "mutation { x }"})
    assert refused.status_code == 405  # GraphQL over HTTP: Method Not Allowed
