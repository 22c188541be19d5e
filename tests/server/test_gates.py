"""The gates in front of /graphql (server/gates.py), over HTTP: which requests are
authenticated, the request body limit, and what GET answers tell caches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.builders import SECRET_SETTING, bearer, token

HTML = {"accept": "text/html"}
SCHEMA = "{__schema{types{name}}}"


@pytest.fixture
async def guarded(settings, start_app) -> Any:
    """A server that needs credentials, GraphiQL on."""
    return await start_app(settings.model_copy(update={"jwt_secret": SECRET_SETTING}))


async def test_a_get_that_carries_a_query_is_authenticated_however_it_is_encoded(
    guarded,
) -> None:
    for url in (
        f"/graphql?%71uery={SCHEMA}",  # percent-encoded name: still the query parameter
        f"/graphql?query={SCHEMA}",
        f"/graphql?x=1&%71uery={SCHEMA}",
        "/graphql?query=",
    ):
        response = await guarded.get(url, headers=HTML)
        assert response.status_code == 401, url
        assert "types" not in response.text and "graphiql" not in response.text.lower()
    allowed = await guarded.get(f"/graphql?%71uery={SCHEMA}", headers=bearer(token()))
    assert allowed.status_code == 200 and allowed.json()["data"]["__schema"]["types"]
    page = await guarded.get("/graphql", headers=HTML)  # the page itself holds no data
    assert page.status_code == 200 and "graphiql" in page.text.lower()


async def test_a_body_over_the_limit_is_413_whether_declared_or_chunked(
    settings, start_app
) -> None:
    client = await start_app(settings.model_copy(update={"max_request_bytes": 2048}))
    big = b'{"query": "{ suspendedRuns { total } }"' + b" " * 4000 + b"}"
    json = {"content-type": "application/json"}

    async def chunked(body: bytes) -> AsyncIterator[bytes]:
        for start in range(0, len(body), 500):
            yield body[start : start + 500]

    declared = await client.post("/graphql", content=big, headers=json)
    assert "content-length" in declared.request.headers
    streamed = await client.post("/graphql", content=chunked(big), headers=json)
    assert "content-length" not in streamed.request.headers
    for response in (declared, streamed):
        assert response.status_code == 413
        [error] = response.json()["errors"]
        assert error["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    small = b'{"query": "{ suspendedRuns { total } }"}'
    for content in (small, chunked(small)):
        answer = await client.post("/graphql", content=content, headers=json)
        assert answer.json() == {"data": {"suspendedRuns": {"total": 0}}}


async def test_get_answers_are_private_and_vary_with_the_credentials(settings, start_app) -> None:
    client = await start_app(
        settings.model_copy(
            update={"jwt_secret": SECRET_SETTING, "cors_origins": "https://dash.example"}
        )
    )
    query = "/graphql?query={ suspendedRuns { total } }"
    answers = [
        await client.get(query, headers=bearer(token())),  # 200
        await client.get(query),  # 401
        await client.get("/graphql", headers=HTML),  # the GraphiQL page
        await client.get(query, headers={**bearer(token()), "origin": "https://dash.example"}),
    ]
    assert [a.status_code for a in answers] == [200, 401, 200, 200]
    for answer in answers:
        assert answer.headers["cache-control"] == "private, no-cache"
        vary = {v.strip().lower() for v in answer.headers["vary"].split(",")}
        assert {"authorization", "x-api-key", "accept"} <= vary
    assert "origin" in answers[3].headers["vary"].lower()  # CORS's own Vary is kept
    posted = await client.post("/graphql", json={"query": "{ agents { id } }"})
    assert "cache-control" not in posted.headers
