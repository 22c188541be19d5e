"""Generated queries, variables, request bodies, dates and cursors against a running
server holding runs (hypothesis): never a 500, never an unmasked internal error, and the
server still answers afterwards."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import MongoClient

from suspended_runs.schema import MASKED_MESSAGE
from suspended_runs.server.auth import new_api_key
from suspended_runs.storage import SNAPSHOTS_COLLECTION
from tests.helpers import Server, suspended_doc

FIELDS = [
    "suspendedRuns",
    "agentRun",
    "agents",
    "decisionLog",
    "runs",
    "total",
    "hasMore",
    "nextCursor",
    "runId",
    "agentId",
    "status",
    "toolCalls",
    "args",
    "suspendPayload",
    "decision",
    "__typename",
    "__schema",
    "types",
    "name",
    "nope",
    "output",
    "error",
]
ARGUMENTS = [
    "filter",
    "page",
    "perPage",
    "first",
    "after",
    "runId",
    "agentId",
    "fromDate",
    "toDate",
    "threadId",
    "resourceId",
    "input",
    "toolCallId",
    "resumeData",
    "idempotencyKey",
    "x",
]
MUTATIONS = ["approveToolCall", "declineToolCall", "resumeRun", "startRun", "reconcileRuns"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
literals = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40).map(str),
    st.text(max_size=20).map(lambda t: '"' + t.replace("\\\\", "").replace('"', "") + '"'),
    st.sampled_from(
        ["null", "true", "false", "SUSPENDED", "[1, 2]", "$v", "1.5e300", '"2026-11-30T00:00:00Z"']
    ),
    st.builds(
        lambda k, v: f"{{{k}: {v}}}",
        st.sampled_from(ARGUMENTS),
        st.sampled_from(['"a"', "1", "null"]),
    ),
)


@st.composite
def selections(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        field = draw(st.sampled_from(FIELDS))
        alias = draw(st.sampled_from(["", "", "a1: ", "b2: "]))
        args = ""
        if draw(st.booleans()):
            pairs = draw(st.lists(st.tuples(st.sampled_from(ARGUMENTS), literals), max_size=3))
            args = "(" + ", ".join(f"{k}: {v}" for k, v in pairs) + ")" if pairs else ""
        sub = (
            " { " + draw(selections(depth + 1)) + " }" if depth < 4 and draw(st.booleans()) else ""
        )
        parts.append(f"{alias}{field}{args}{sub}")
    if draw(st.integers(0, 5)) == 0:
        parts.append("... on AgentRun { runId }")
    return " ".join(parts)


@st.composite
def documents(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["query", "mutation", "raw"]))
    if kind == "raw":
        return draw(st.text(max_size=200))
    if kind == "mutation":
        field = draw(st.sampled_from(MUTATIONS))
        return (
            f"mutation($v: JSON) {{ {field}(input: {draw(literals)}) {{ {draw(selections())} }} }}"
        )
    return "query($v: String) { " + draw(selections()) + " }"


@pytest.fixture(scope="module", params=["open", "scoped"])
def server(
    request: pytest.FixtureRequest, mongo_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, str]]]:
    """An open server, and one whose caller is an authenticated, scoped approver. It runs
    as a process of its own: PyMongo draws request ids from the `random` module, and
    hypothesis takes any use of it by a thread of this process while it draws an example
    for the test's own (HypothesisDeprecationWarning, then FlakyStrategyDefinition)."""
    database = f"fuzz_{uuid.uuid4().hex[:8]}"
    with MongoClient[Any](mongo_uri) as client:  # runs to page through, in and out of scope
        docs = [suspended_doc(f"fuzz-{i}", resourceId=f"t-{i % 2}") for i in range(6)]
        client[database][SNAPSHOTS_COLLECTION].insert_many(docs)
    env = {"MONGODB_URI": mongo_uri, "MONGODB_DB": database}
    headers: dict[str, str] = {}
    if request.param == "scoped":
        key, digest = new_api_key()
        keys = tmp_path_factory.mktemp("keys") / "keys.json"
        entry = {"name": "fuzz", "sha256": digest, "role": "approver", "resourceIds": ["t-1"]}
        keys.write_text(json.dumps([entry]))
        env["API_KEYS_FILE"] = str(keys)
        headers = {"x-api-key": key}
    server = Server(tmp_path_factory.mktemp(f"fuzz-{request.param}") / "data", env)
    server.start()
    try:
        yield server.url, headers
    finally:
        assert server.stop() == 0, server.log.read_text()[-3000:]


@pytest.fixture(scope="module")
def http(server: tuple[str, dict[str, str]]) -> Iterator[httpx.Client]:
    url, headers = server
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        yield client


def check(response: httpx.Response, *, internal_allowed: bool = True) -> None:
    """No 500 and no unmasked internal error; none at all where `internal_allowed` is
    False (a request whose every part is a client's value: a mistake, or a bound)."""
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        for error in (body.get("errors") or []) if isinstance(body, dict) else []:
            code = (error.get("extensions") or {}).get("code")
            assert code, error
            assert internal_allowed or code != "INTERNAL_SERVER_ERROR", error
            if code == "INTERNAL_SERVER_ERROR":
                assert error["message"] == MASKED_MESSAGE


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    document=documents(),
    variables=st.dictionaries(st.sampled_from(["v", "x", "filter"]), json_values, max_size=3),
)
def test_generated_requests_never_get_a_500_or_an_unmasked_error(http, document, variables) -> None:
    check(http.post("/graphql", json={"query": document, "variables": variables}))


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.binary(max_size=300) | json_values.map(lambda v: str(v).encode()))
def test_garbage_bodies_never_get_a_500(http, body) -> None:
    check(http.post("/graphql", content=body, headers={"content-type": "application/json"}))


EDGE_MILLIS = [-62135596800001, -62135596800000, 0, 253402300799999, 253402300800000, 10**20]
"""Milliseconds around the ends of the calendar (years 1 and 9999), and beyond."""
dates = st.one_of(
    st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat()),
    st.sampled_from(
        [
            "0001-01-01T00:00:00Z",
            "0001-01-01T00:00:00.000001Z",
            "0001-01-01T00:00:00+01:00",
            "9999-12-31T23:59:59.999999Z",
            "9999-12-31T23:59:59.9995Z",
            "9999-12-31T23:00:00-05:00",
        ]
    ),
    st.text(max_size=30),
)
cursors = st.one_of(
    st.tuples(
        st.sampled_from(EDGE_MILLIS) | st.integers(-(2**63), 2**63), st.text(max_size=10)
    ).map(lambda c: base64.urlsafe_b64encode(json.dumps(list(c)).encode()).decode().rstrip("=")),
    st.text(max_size=30),
)
LIST = """query($f: SuspendedRunsFilter, $r: RunsFilter, $after: String, $first: Int,
  $page: Int, $perPage: Int) {
  suspendedRuns(filter: $f, first: $first, after: $after) { total nextCursor runs { runId } }
  runs(filter: $r, page: $page, perPage: $perPage) { total runs { runId createdAt } }
}"""


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    window=st.dictionaries(st.sampled_from(["fromDate", "toDate"]), dates),
    after=cursors,
    first=st.sampled_from([None, 0, 1, 5, 2000, 2**31]),
    page=st.sampled_from([None, 0, 1, 99, 2**31]),
)
def test_dates_and_cursors_at_and_beyond_the_calendar_never_get_a_500(
    http, window, after, first, page
) -> None:
    variables = {"f": window, "r": window, "after": after, "first": first, "page": page}
    for request in (
        http.post("/graphql", json={"query": LIST, "variables": variables}),
        http.get("/graphql", params={"query": LIST, "variables": json.dumps(variables)}),
    ):
        check(request, internal_allowed=False)


def _nested(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a":' * depth + "1" + "}" * depth)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    members=st.dictionaries(
        st.sampled_from(["query", "variables", "operationName", "extensions"]), json_values
    ),
    depth=st.sampled_from([0, 0, 10, 127, 129, 1000, 5000]),
    kind=st.sampled_from(["list", "object"]),
    where=st.sampled_from(["variables", "extensions", "operationName", "body"]),
)
def test_request_bodies_of_any_shape_never_get_a_500(http, members, depth, kind, where) -> None:
    body = json.dumps({"query": "query Q { viewer { role } }", **members})
    if depth:
        nested = _nested(depth, kind)
        body = nested if where == "body" else body[:-1] + f', "{where}": {nested}}}'
    posted = http.post("/graphql", content=body, headers={"content-type": "application/json"})
    check(posted, internal_allowed=False)
    params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in members.items()}
    got = http.get("/graphql", params={"query": "query Q { viewer { role } }", **params})
    check(got, internal_allowed=False)


def test_the_server_still_answers_after_the_fuzzing(http) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    body = http.post("/graphql", json={"query": "{ suspendedRuns { total } }"}).json()
    assert set(body) == {"data"} and body["data"]["suspendedRuns"]["total"] in (3, 6)
