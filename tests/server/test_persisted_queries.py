"""Persisted queries (server/persisted_queries.py): Apollo's automatic persisted queries by
POST and GET, kept in MongoDB for every instance and bounded; trusted documents from a
manifest made by Apollo's own generator, with the inbox's operations always allowed."""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server import Settings, create_app
from suspended_runs.server.persisted_queries import INBOX_MANIFEST
from tests.builders import SECRET_SETTING, bearer, token
from tests.helpers import CLIENTS_DIR, ROOT, ThreadedServer, node_client

QUERY = "query Listed { runs { total } }"
SHA = hashlib.sha256(QUERY.encode()).hexdigest()
BY_HASH = {"persistedQuery": {"version": 1, "sha256Hash": SHA}}
EMPTY = {"format": "apollo-persisted-query-manifest", "version": 1, "operations": []}


def _code(answer: httpx.Response) -> str:
    code: str = answer.json()["errors"][0]["extensions"]["code"]
    return code


async def test_an_unknown_hash_is_not_found_then_the_query_registers_it(client) -> None:
    unknown = await client.post("/graphql", json={"extensions": BY_HASH})
    assert unknown.status_code == 200 and _code(unknown) == "PERSISTED_QUERY_NOT_FOUND"
    assert unknown.json()["errors"][0]["message"] == "PersistedQueryNotFound"
    registered = await client.post("/graphql", json={"query": QUERY, "extensions": BY_HASH})
    assert registered.json() == {"data": {"runs": {"total": 0}}}
    by_post = await client.post("/graphql", json={"extensions": BY_HASH})
    assert by_post.json() == {"data": {"runs": {"total": 0}}}
    params = {"extensions": json.dumps(BY_HASH)}
    by_get = await client.get("/graphql", params=params, headers={"accept": "text/html,*/*"})
    assert by_get.json() == {"data": {"runs": {"total": 0}}}, "not the GraphiQL page"
    tag = by_get.headers["etag"]
    again = await client.get("/graphql", params=params, headers={"if-none-match": tag})
    assert again.status_code == 304


async def test_a_hash_that_is_not_the_querys_is_refused_and_registers_nothing(client) -> None:
    other = "{ viewer { role } }"
    mismatch = await client.post("/graphql", json={"query": other, "extensions": BY_HASH})
    assert mismatch.status_code == 400 and _code(mismatch) == "PERSISTED_QUERY_HASH_MISMATCH"
    still = await client.post("/graphql", json={"extensions": BY_HASH})
    assert _code(still) == "PERSISTED_QUERY_NOT_FOUND"
    for bad in ({"version": 2, "sha256Hash": SHA}, {"version": 1, "sha256Hash": "x"}, "hash"):
        answer = await client.post("/graphql", json={"extensions": {"persistedQuery": bad}})
        assert answer.status_code == 400 and _code(answer) == "BAD_REQUEST", bad


async def test_a_document_that_fails_validation_is_not_registered(client) -> None:
    invalid = "{ nope }"
    sha = hashlib.sha256(invalid.encode()).hexdigest()
    ext = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    await client.post("/graphql", json={"query": invalid, "extensions": ext})
    answer = await client.post("/graphql", json={"extensions": ext})
    assert _code(answer) == "PERSISTED_QUERY_NOT_FOUND"


async def test_every_instance_knows_what_one_registered_and_the_least_used_go(
    settings: Settings, start_app, db
) -> None:
    bounded = settings.model_copy(update={"persisted_queries_max": 3})
    first, second = await start_app(bounded), await start_app(bounded)
    await first.post("/graphql", json={"query": QUERY, "extensions": BY_HASH})
    assert (await second.post("/graphql", json={"extensions": BY_HASH})).json()["data"]
    for n in range(3):
        query = f"query Q{n} {{ runs {{ total }} }}"
        ext = {
            "persistedQuery": {
                "version": 1,
                "sha256Hash": hashlib.sha256(query.encode()).hexdigest(),
            }
        }
        await first.post("/graphql", json={"query": query, "extensions": ext})
    kept = await db["suspended_runs_persisted_queries"].find({}, {"query": 1}).to_list()
    assert len(kept) == 3 and QUERY not in [k["query"] for k in kept]
    # A third instance, which never read it, finds the least recently used gone.
    third = await start_app(bounded)
    assert _code(await third.post("/graphql", json={"extensions": BY_HASH})) == (
        "PERSISTED_QUERY_NOT_FOUND"
    )


def _scoped(resources: list[str]) -> dict[str, str]:
    claim = {"resourceIds": resources, "agentIds": None}
    return bearer(token(sub=f"viewer-of-{resources}", suspended_runs_scope=claim))


def _registering(query: str) -> dict[str, Any]:
    sha = hashlib.sha256(query.encode()).hexdigest()
    return {"query": query, "extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha}}}


def _by_hash(query: str) -> dict[str, Any]:
    return {"extensions": _registering(query)["extensions"]}


async def test_a_scope_runs_by_hash_only_what_callers_of_that_scope_registered(
    settings: Settings, start_app
) -> None:
    client = await start_app(settings.model_copy(update={"jwt_secret": SECRET_SETTING}))
    a, b = _scoped(["tenant-a"]), _scoped(["tenant-b"])
    # The same scope, as another subject writes it.
    also_a = bearer(token(sub="someone-else", suspended_runs_scope={"resourceIds": ["tenant-a"]}))
    registered = await client.post("/graphql", json=_registering(QUERY), headers=a)
    assert registered.json() == {"data": {"runs": {"total": 0}}}
    assert (await client.post("/graphql", json=_by_hash(QUERY), headers=also_a)).json()["data"]
    unknown = await client.post("/graphql", json=_by_hash(QUERY), headers=b)
    assert _code(unknown) == "PERSISTED_QUERY_NOT_FOUND", "no oracle of another scope's"
    params = {"extensions": json.dumps(BY_HASH)}
    assert _code(await client.get("/graphql", params=params, headers=b)) == (
        "PERSISTED_QUERY_NOT_FOUND"
    )
    await client.post("/graphql", json=_registering(QUERY), headers=b)
    assert (await client.get("/graphql", params=params, headers=b)).json()["data"]
    inbox = json.loads(INBOX_MANIFEST.read_text())["operations"]
    viewer = next(o for o in inbox if "viewer" in o["body"] and o["type"] == "query")
    by_id = {"persistedQuery": {"version": 1, "sha256Hash": viewer["id"]}}
    for caller in (a, b):  # the inbox's manifest is everyone's
        answer = await client.post("/graphql", json={"extensions": by_id}, headers=caller)
        assert answer.json()["data"]["viewer"], answer.text


async def test_a_scope_holds_its_share_and_registers_at_its_rate(
    settings: Settings, start_app, db
) -> None:
    bounded = settings.model_copy(
        update={
            "jwt_secret": SECRET_SETTING,
            "persisted_queries_max": 3,
            "persisted_queries_per_scope": 2,
            "persisted_queries_per_minute": 4,
        }
    )
    client = await start_app(bounded)
    a, b = _scoped(["tenant-a"]), _scoped(["tenant-b"])
    queries = [f"query Q{n} {{ runs {{ total }} }}" for n in range(6)]
    await client.post("/graphql", json=_registering(QUERY), headers=b)
    for query in queries[:3]:
        await client.post("/graphql", json=_registering(query), headers=a)
    collection = db["suspended_runs_persisted_queries"]
    kept = {document["query"] async for document in collection.find({})}
    assert kept == {QUERY, *queries[1:3]}, "a scope evicts only its own, beyond its share"
    for query in queries[3:]:  # the 4th and 5th registrations of a minute run...
        answer = await client.post("/graphql", json=_registering(query), headers=a)
        assert answer.json() == {"data": {"runs": {"total": 0}}}
    found = [
        (await client.post("/graphql", json=_by_hash(q), headers=a)).json()["data"] is not None
        for q in queries[3:]
    ]
    assert found == [True, False, False], "...and only the 4th is kept"
    kept = {document["query"] async for document in collection.find({})}
    assert kept == {QUERY, queries[2], queries[3]}
    other = await start_app(bounded)  # another instance, which keeps nothing in memory yet
    assert _code(await other.post("/graphql", json=_by_hash(queries[0]), headers=a)) == (
        "PERSISTED_QUERY_NOT_FOUND"
    )
    assert (await other.post("/graphql", json=_by_hash(QUERY), headers=b)).json()["data"]


async def test_documents_kept_before_scopes_are_dropped_at_start(
    settings: Settings, start_app, db
) -> None:
    old = {"_id": SHA, "query": QUERY, "lastUsed": datetime.now(UTC)}
    await db["suspended_runs_persisted_queries"].insert_one(old)
    client = await start_app(settings)
    assert _code(await client.post("/graphql", json={"extensions": BY_HASH})) == (
        "PERSISTED_QUERY_NOT_FOUND"
    )
    assert await db["suspended_runs_persisted_queries"].count_documents({"_id": SHA}) == 0
    await client.post("/graphql", json={"query": QUERY, "extensions": BY_HASH})
    assert (await client.post("/graphql", json={"extensions": BY_HASH})).json()["data"]


@pytest.mark.parametrize("method", ["post", "get"])
def test_apollo_clients_persisted_query_link_registers_then_sends_the_hash(
    clients_node: Path, settings: Settings, method: str
) -> None:
    with ThreadedServer(settings) as url:
        got = node_client(clients_node, "apollo.mjs", f"{url}/graphql", "persisted", method)
    assert "error" not in got, got
    assert [d["viewer"]["role"] for d in got["data"]] == ["ADMIN", "ADMIN"]
    first, registering, by_hash = got["requests"]
    assert first["method"] == by_hash["method"] == method.upper()
    assert "query" not in (first["body"] or {}) and "query" not in (by_hash["body"] or {})
    assert registering["method"] == "POST" and registering["body"]["query"]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory, clients_node: Path) -> Path:
    """persisted-query-manifest.json of a small client, as Apollo's generator writes it."""
    project = tmp_path_factory.mktemp("client")
    (project / "src").mkdir()
    (project / "src" / "viewer.graphql").write_text("query Viewer { viewer { subject role } }\n")
    (project / "src" / "listed.graphql").write_text("query Listed { runs { total } }\n")
    generator = CLIENTS_DIR / "node_modules" / ".bin" / "generate-persisted-query-manifest"
    done = subprocess.run(
        [str(clients_node), str(generator.resolve())],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return project / "persisted-query-manifest.json"


def _trusted(settings: Settings, manifest: Path) -> Settings:
    return settings.model_copy(
        update={"persisted_queries_only": True, "persisted_queries_file": manifest}
    )


async def test_trusted_documents_run_only_the_manifests_and_the_inboxs(
    settings: Settings, start_app, manifest: Path
) -> None:
    operations = json.loads(manifest.read_text())["operations"]  # noqa: ASYNC240
    client = await start_app(_trusted(settings, manifest))
    [listed] = [o for o in operations if o["name"] == "Listed"]
    by_id = {"persistedQuery": {"version": 1, "sha256Hash": listed["id"]}}
    assert (await client.post("/graphql", json={"extensions": by_id})).json()["data"]["runs"][
        "total"
    ] == 0
    assert (await client.post("/graphql", json={"query": listed["body"]})).json()["data"]
    for other in (
        {"query": "{ viewer { role } }"},
        {"query": QUERY, "extensions": BY_HASH},
        {"extensions": BY_HASH},
    ):
        refused = await client.post("/graphql", json=other)
        assert refused.status_code == 400 and _code(refused) == "PERSISTED_QUERY_NOT_ALLOWED"
    inbox = json.loads(INBOX_MANIFEST.read_text())["operations"]
    viewer = next(o["body"] for o in inbox if "viewer" in o["body"] and o["type"] == "query")
    assert (await client.get("/graphql", params={"query": viewer})).json()["data"]["viewer"]
    assert (await client.get("/graphql", headers={"accept": "text/html"})).status_code == 404
    introspection = "{ __schema { queryType { name } } }"
    assert _code(await client.post("/graphql", json={"query": introspection})) == (
        "PERSISTED_QUERY_NOT_ALLOWED"
    )


def test_apollo_client_sends_manifest_ids_to_a_server_of_trusted_documents(
    clients_node: Path, settings: Settings, manifest: Path
) -> None:
    with ThreadedServer(_trusted(settings, manifest)) as url:
        got = node_client(clients_node, "apollo.mjs", f"{url}/graphql", "trusted", str(manifest))
    assert "error" not in got, got
    assert got["data"][0]["viewer"]["role"] == "ADMIN"
    [request] = got["requests"]
    assert "query" not in request["body"]


def test_the_inbox_manifest_lists_exactly_what_the_page_sends(clients_node: Path) -> None:
    done = subprocess.run(
        [str(clients_node), str(CLIENTS_DIR / "inbox_manifest.mjs")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == json.loads(INBOX_MANIFEST.read_text()), (
        "regenerate: node tests/graphql_clients/inbox_manifest.mjs > "
        "server/static/persisted-operations.json"
    )


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "needs PERSISTED_QUERIES_FILE"),
        ("{", "cannot read"),
        ('{"format": "other"}', "is not a manifest"),
        (json.dumps({**EMPTY, "operations": [{"id": "x", "body": "{ a }"}]}), "operation 0"),
    ],
)
def test_a_bad_manifest_stops_the_start_naming_it(
    settings: Settings, tmp_path: Path, content: str | None, fragment: str
) -> None:
    update: dict[str, Any] = {"persisted_queries_only": True}
    if content is not None:
        path = tmp_path / "manifest.json"
        path.write_text(content)
        update["persisted_queries_file"] = path
    with pytest.raises(ConfigurationError, match=fragment):
        create_app(settings.model_copy(update=update))
