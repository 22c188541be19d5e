"""Generated queries and variables against a running server (hypothesis): never a 500,
never an unmasked internal error, and the server still answers afterwards."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suspended_runs.schema import MASKED_MESSAGE
from suspended_runs.server import Settings
from suspended_runs.server.auth import new_api_key
from tests.helpers import ThreadedServer

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
    """An open server, and one whose caller is an authenticated, scoped approver."""
    settings = Settings(mongodb_uri=mongo_uri, mongodb_db=f"fuzz_{uuid.uuid4().hex[:8]}")
    headers: dict[str, str] = {}
    if request.param == "scoped":
        key, digest = new_api_key()
        keys = tmp_path_factory.mktemp("keys") / "keys.json"
        entry = {"name": "fuzz", "sha256": digest, "role": "approver", "resourceIds": ["t-1"]}
        keys.write_text(json.dumps([entry]))
        settings = settings.model_copy(update={"api_keys_file": keys})
        headers = {"x-api-key": key}
    with ThreadedServer(settings) as url:
        yield url, headers


@pytest.fixture(scope="module")
def http(server: tuple[str, dict[str, str]]) -> Iterator[httpx.Client]:
    url, headers = server
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        yield client


def check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        for error in (body.get("errors") or []) if isinstance(body, dict) else []:
            code = (error.get("extensions") or {}).get("code")
            assert code, error
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


def test_the_server_still_answers_after_the_fuzzing(http) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    body = http.post("/graphql", json={"query": "{ suspendedRuns { total } }"}).json()
    assert body == {"data": {"suspendedRuns": {"total": 0}}}
