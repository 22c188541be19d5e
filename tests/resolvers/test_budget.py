"""What one request may cost (resolvers/budget.py): rows, mutations, sizes; each refusal
names its limit, and a refused field did nothing."""

from __future__ import annotations

from tests.helpers import make_gql, start_run


async def test_rows_over_the_limit_are_refused_naming_it(gql) -> None:
    aliases = " ".join(f"p{i}: suspendedRuns(perPage: 500) {{ total }}" for i in range(5))
    body = await gql(f"{{ {aliases} }}")
    limits = {e["extensions"].get("limit") for e in body["errors"]}
    assert limits == {"MAX_ROWS_PER_REQUEST"}
    assert len(body["errors"]) == 1  # four pages of 500 fit in 2,000 rows; the fifth not


async def test_mutations_over_the_limit_are_refused_and_do_nothing(settings, start_app) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"max_mutations_per_request": 2})))
    run = await start_run(gql, "file-cleaner")
    cancels = " ".join(
        f'c{i}: cancelRun(input: {{runId: "{run["runId"]}"}}) {{ __typename }}' for i in range(3)
    )
    body = await gql(f"mutation {{ {cancels} }}")
    assert [e["extensions"]["limit"] for e in body["errors"]] == ["MAX_MUTATIONS_PER_REQUEST"]
    assert body["errors"][0]["path"] == ["c2"]  # the first two ran, in order; the third not
    log = await gql("query($r: ID!) { decisionLog(runId: $r) { action } }", {"r": run["runId"]})
    assert log["data"]["decisionLog"] == [{"action": "CANCEL"}]


async def test_large_texts_and_data_are_refused_naming_the_limit(gql) -> None:
    run = await start_run(gql, "city-asker", "Where?")
    big = {"name": "x" * 70_000}
    body = await gql(
        "mutation($r: ID!, $d: JSON!) { resumeRun(input: {runId: $r, resumeData: $d}) "
        "{ __typename } }",
        {"r": run["runId"], "d": big},
    )
    assert body["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "limit": "MAX_JSON_BYTES"}
    body = await gql(
        'mutation($p: String!) { startRun(input: {agentId: "file-cleaner", prompt: $p}) '
        "{ __typename } }",
        {"p": "y" * 9000},
    )
    assert body["errors"][0]["extensions"]["limit"] == "MAX_TEXT_BYTES"
    log = await gql("query($r: ID!) { decisionLog(runId: $r) { action } }", {"r": run["runId"]})
    assert log["data"]["decisionLog"] == []  # refused before anything, audit included
