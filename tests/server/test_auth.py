"""Access control over HTTP (server/auth.py, server/gates.py, resolvers/access.py)."""

from __future__ import annotations

import http.server
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server import Settings, auth, create_app
from suspended_runs.server.auth import new_api_key
from tests.builders import LIST, SECRET, SECRET_SETTING, bearer, key, post, token
from tests.helpers import eventually, suspended_doc

APPROVE = """mutation($run: ID!) { approveToolCall(input: {runId: $run}) {
  __typename ... on Problem { message } ... on Forbidden { neededRole } } }"""
RUN = "query($id: ID!) { agentRun(runId: $id) { runId } }"
AGENTS = "{ agents { id suspendedRuns } }"
LOG = "query($id: ID!) { decisionLog(runId: $id) { decidedBy } }"


async def test_two_tenants_see_disjoint_lists_with_their_own_totals(tenants) -> None:
    client = tenants["client"]
    a = (await post(client, LIST, key(tenants, "a-viewer"))).json()["data"]["suspendedRuns"]
    b = (await post(client, LIST, key(tenants, "b-approver"))).json()["data"]["suspendedRuns"]
    assert (a["total"], b["total"]) == (3, 2)
    assert {r["resourceId"] for r in a["runs"]} == {"tenant-a"}
    assert {r["resourceId"] for r in b["runs"]} == {"tenant-b"}
    # Asking for the other tenant's resource finds nothing, and counts nothing.
    peek = '{ suspendedRuns(filter: {resourceId: "tenant-b"}) { total runs { runId } } }'
    body = (await post(client, peek, key(tenants, "a-viewer"))).json()
    assert body["data"]["suspendedRuns"] == {"total": 0, "runs": []}


async def test_a_jwt_scope_limits_the_list_the_same_way(tenants) -> None:
    scoped = bearer(token(aud="runs-api", suspended_runs_scope={"resourceIds": ["tenant-b"]}))
    body = (await post(tenants["client"], LIST, scoped)).json()
    assert body["data"]["suspendedRuns"]["total"] == 2


async def sees_nothing(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    """No run, no agent, no decision of anyone: lists, lookups, agents and the audit log."""
    body = (await post(client, LIST, headers)).json()
    assert body == {"data": {"suspendedRuns": {"total": 0, "runs": []}}}
    peek = '{ suspendedRuns(filter: {resourceId: "tenant-a"}) { total } }'
    assert (await post(client, peek, headers)).json()["data"]["suspendedRuns"]["total"] == 0
    assert (await post(client, RUN, headers, id="a-0")).json() == {"data": {"agentRun": None}}
    assert (await post(client, AGENTS, headers)).json() == {"data": {"agents": []}}
    assert (await post(client, LOG, headers, id="a-0")).json() == {"data": {"decisionLog": []}}


async def test_a_key_without_a_scope_sees_no_run_and_decides_none(tenants) -> None:
    client, unscoped = tenants["client"], key(tenants, "unscoped")
    await post(client, APPROVE, tenants["admin"], run="a-0")  # a record in the audit log
    assert (await post(client, LOG, tenants["admin"], id="a-0")).json()["data"]["decisionLog"]
    await sees_nothing(client, unscoped)
    answer = (await post(client, APPROVE, unscoped, run="a-1")).json()["data"]
    assert answer["approveToolCall"]["__typename"] == "RunNotFound"


async def test_a_token_without_our_scope_claim_sees_no_run(tenants) -> None:
    client = tenants["client"]
    claims: dict[str, Any]
    for claims in (
        {},  # no scope claim at all
        {"scope": "runs:read runs:write"},  # OAuth2's scope string is not ours: not a 401
        {"suspended_runs_scope": {}},
        {"suspended_runs_scope": {"resourceIds": None, "agentIds": None}},
    ):
        headers = bearer(token(aud="runs-api", role="approver", **claims))
        assert (await post(client, LIST, headers)).status_code == 200
        await sees_nothing(client, headers)


async def test_only_credentials_that_say_all_see_every_run(tenants) -> None:
    client = tenants["client"]
    for headers in (key(tenants, "everything"), tenants["admin"]):
        body = (await post(client, LIST, headers)).json()
        assert body["data"]["suspendedRuns"]["total"] == 5
    for malformed in ("everything", ["all"], {"resourceIds": "tenant-a"}):
        headers = bearer(token(aud="runs-api", suspended_runs_scope=malformed))
        response = await post(client, LIST, headers)
        assert response.status_code == 401
        assert "scope claim is malformed" in response.json()["errors"][0]["message"]


RECONCILE = """mutation { reconcileRuns { __typename
  ... on RunsReconciled { scanned } ... on Forbidden { message neededRole } } }"""


async def test_only_an_admin_of_all_runs_may_reconcile(tenants) -> None:
    client = tenants["client"]
    for scoped in (key(tenants, "a-admin"), bearer(token(aud="runs-api", role="admin"))):
        body = (await post(client, RECONCILE, scoped)).json()
        assert body["data"]["reconcileRuns"] == {
            "__typename": "Forbidden",
            "message": 'reconciling needs an admin whose scope is "all"',
            "neededRole": "admin",
        }
    body = (await post(client, RECONCILE, tenants["admin"])).json()
    assert body["data"]["reconcileRuns"]["__typename"] == "RunsReconciled"


async def test_agents_are_listed_within_the_callers_scope(tenants, snapshots) -> None:
    client, admin = tenants["client"], tenants["admin"]
    await snapshots.insert_one(suspended_doc("b-x", agent_id="b-only", resourceId="tenant-b"))

    async def agents(headers: dict[str, str]) -> dict[str, int]:
        body = (await post(client, AGENTS, headers)).json()
        return {a["id"]: a["suspendedRuns"] for a in body["data"]["agents"]}

    async def seen() -> bool:
        return "b-only" in await agents(admin)

    await eventually(seen, within=2)
    everything = await agents(admin)
    assert everything["approver"] == 5 and "file-cleaner" in everything  # a Python agent
    tenant_a = await agents(key(tenants, "a-viewer"))
    assert "b-only" not in tenant_a and tenant_a["approver"] == 3
    assert await agents(key(tenants, "approver-agent")) == {"approver": 5}


async def test_a_token_expired_within_the_leeway_is_still_accepted(tenants) -> None:
    late = bearer(token(aud="runs-api", exp=int(time.time()) - 10, suspended_runs_scope="all"))
    body = (await post(tenants["client"], LIST, late)).json()
    assert body["data"]["suspendedRuns"]["total"] == 5  # JWT_LEEWAY_SECONDS: 30 by default


async def test_a_token_cannot_pass_for_an_api_key(tenants) -> None:
    """Subjects are `key:<name>` and `jwt:<sub>`: a token whose sub is `key:b-approver` is
    another caller, in the audit log and for idempotency keys."""
    client = tenants["client"]
    approve = """mutation($run: ID!) { approveToolCall(input: {runId: $run,
      idempotencyKey: "once"}) { __typename } }"""
    impostor = bearer(
        token(
            aud="runs-api",
            sub="key:b-approver",
            role="approver",
            suspended_runs_scope={"resourceIds": ["tenant-b"]},
        )
    )
    for headers in (key(tenants, "b-approver"), impostor):
        body = (await post(client, approve, headers, run="b-1")).json()
        assert body["data"]["approveToolCall"]["__typename"] == "ExecutorUnavailable"
    body = (await post(client, LOG, key(tenants, "b-approver"), id="b-1")).json()
    decided_by = [record["decidedBy"] for record in body["data"]["decisionLog"]]
    assert decided_by == ["key:b-approver", "jwt:key:b-approver"]  # not one caller's replay


async def test_a_viewer_cannot_decide(tenants) -> None:
    body = (await post(tenants["client"], APPROVE, key(tenants, "a-viewer"), run="a-0")).json()
    assert body["data"]["approveToolCall"] == {
        "__typename": "Forbidden",
        "message": "deciding needs the approver role",
        "neededRole": "approver",
    }


async def test_a_caller_without_a_known_role_is_forbidden_to_query(tenants) -> None:
    body = (await post(tenants["client"], LIST, key(tenants, "guest"))).json()
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_an_out_of_scope_run_is_indistinguishable_from_an_unknown_one(tenants) -> None:
    client, approver = tenants["client"], key(tenants, "b-approver")
    other = (await post(client, APPROVE, approver, run="a-0")).json()["data"]["approveToolCall"]
    unknown = (await post(client, APPROVE, approver, run="no-such")).json()["data"][
        "approveToolCall"
    ]
    assert other["__typename"] == unknown["__typename"] == "RunNotFound"
    assert other["message"].replace("a-0", "X") == unknown["message"].replace("no-such", "X")
    for run_id in ("a-0", "no-such"):
        body = (await post(client, RUN, approver, id=run_id)).json()
        assert body == {"data": {"agentRun": None}}


async def test_the_audit_record_names_the_authenticated_subject(tenants) -> None:
    client = tenants["client"]
    headers = {**key(tenants, "b-approver"), "x-actor": "someone-else"}
    answer = (await post(client, APPROVE, headers, run="b-0")).json()["data"]["approveToolCall"]
    assert answer["__typename"] == "ExecutorUnavailable"  # a Mastra run, no Mastra configured
    log = "query($id: ID!) { decisionLog(runId: $id) { decidedBy } }"
    body = (await post(client, log, key(tenants, "b-approver"), id="b-0")).json()
    assert body["data"]["decisionLog"] == [{"decidedBy": "key:b-approver"}]
    hidden = (await post(client, log, key(tenants, "a-viewer"), id="b-0")).json()
    assert hidden["data"]["decisionLog"] == []


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "credentials are required"),
        ({"x-api-key": "sr_not-a-key"}, "API key is not valid"),
        (bearer(token(aud="runs-api", exp=int(time.time()) - 120)), "expired"),
        (bearer(token(key="another-secret-that-is-long-enough!", aud="runs-api")), "signature"),
        (bearer(token(aud="another-api")), "audience"),
        (bearer("not.a.token"), "not valid"),
    ],
)
async def test_bad_credentials_get_401_with_a_graphql_body(
    tenants, caplog, headers, reason
) -> None:
    with caplog.at_level(logging.WARNING, logger="suspended_runs.server.gates"):
        response = await post(tenants["client"], LIST, headers)
    assert response.status_code == 401
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert reason in error["message"]
    secrets = [v for v in headers.values()] + [SECRET]
    for secret in secrets:
        assert secret.removeprefix("Bearer ") not in response.text
        assert secret.removeprefix("Bearer ") not in caplog.text


async def test_api_key_names_and_keys_are_unique(settings, tmp_path: Path) -> None:
    _, digest = new_api_key()
    _, other = new_api_key()
    for entries, problem in [
        ([("ops", digest), ("ops", other)], "key names must be unique: ['ops']"),
        ([("ops", digest), ("dash", digest)], "the same key: ['dash', 'ops']"),
    ]:
        key_file = tmp_path / "keys.json"
        key_file.write_text(
            json.dumps([{"name": n, "sha256": d, "role": "viewer"} for n, d in entries])
        )
        with pytest.raises(ConfigurationError) as refused:
            create_app(settings.model_copy(update={"api_keys_file": key_file}))
        assert str(refused.value).startswith("API_KEYS_FILE ") and problem in str(refused.value)


async def test_the_jwt_secret_is_never_shown(settings, start_app, caplog) -> None:
    configured = settings.model_copy(update={"jwt_secret": SECRET_SETTING})
    assert SECRET not in repr(configured) and SECRET not in str(configured.model_dump())
    assert configured.jwt_config is not None and SECRET not in repr(configured.jwt_config)
    with caplog.at_level(logging.DEBUG):
        client = await start_app(configured)
        assert (await post(client, LIST, bearer(token()))).status_code == 200
        assert (await post(client, LIST, bearer(token(key=SECRET + "x")))).status_code == 401
    assert SECRET not in caplog.text


async def test_rs256_tokens_are_checked_with_the_public_key(settings: Settings, start_app) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    client = await start_app(settings.model_copy(update={"jwt_public_key": public_pem}))
    good = bearer(token(key=private, algorithm="RS256"))
    assert (await post(client, LIST, good)).status_code == 200
    forged = bearer(token(key=SECRET, algorithm="HS256"))  # HS256 with a guessed key
    assert (await post(client, LIST, forged)).status_code == 401


class Jwks:
    """An issuer's JWKS, served on 127.0.0.1 from a thread; `publish` rotates its keys."""

    def __init__(self) -> None:
        self.document: dict[str, Any] = {"keys": []}
        self.fetches = 0
        jwks = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                jwks.fetches += 1
                body = json.dumps(jwks.document).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def publish(self, **keys: Any) -> None:
        """The JWKS now holds these private keys' public halves, by key id."""
        self.document = {"keys": [_jwk(kid, key.public_key()) for kid, key in keys.items()]}


def _jwk(kid: str, public_key: Any) -> dict[str, Any]:
    algorithm = RSAAlgorithm if isinstance(public_key, rsa.RSAPublicKey) else ECAlgorithm
    return {**algorithm.to_jwk(public_key, as_dict=True), "kid": kid, "use": "sig"}


def signed(private_key: Any, algorithm: str, kid: str | None, **claims: Any) -> str:
    body = {"sub": "someone", "role": "viewer", "exp": int(time.time()) + 600, **claims}
    return jwt.encode(body, private_key, algorithm=algorithm, headers={"kid": kid})


@pytest.fixture
def jwks() -> Iterator[Jwks]:
    served = Jwks()
    served.thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


async def test_tokens_are_checked_with_the_issuers_jwks_as_its_keys_rotate(
    settings, start_app, jwks, monkeypatch
) -> None:
    monkeypatch.setattr(auth, "JWKS_REFETCH_SECONDS", 0.0)  # no wait for the rotated key
    old_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    new_key = ec.generate_private_key(ec.SECP256R1())
    jwks.publish(old=old_key)
    client = await start_app(settings.model_copy(update={"jwt_jwks_url": jwks.url}))
    before = bearer(signed(old_key, "RS256", "old"))
    assert (await post(client, LIST, before)).status_code == 200
    jwks.publish(new=new_key)  # the issuer rotates: a new key (ES256), the old one retired
    after = bearer(signed(new_key, "ES256", "new"))
    assert (await post(client, LIST, after)).status_code == 200
    assert (await post(client, LIST, before)).status_code == 401
    for forged in (
        signed(new_key, "ES256", "old"),  # a key id that names another key
        token(key=SECRET, algorithm="HS256"),  # a shared secret, no key id
        jwt.encode({"sub": "x", "exp": int(time.time()) + 60}, "", algorithm="none"),
    ):
        assert (await post(client, LIST, bearer(forged))).status_code == 401


async def test_unknown_key_ids_do_not_make_the_server_fetch_the_jwks_again(
    settings, start_app, jwks
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    jwks.publish(current=key)
    client = await start_app(settings.model_copy(update={"jwt_jwks_url": jwks.url}))
    assert (await post(client, LIST, bearer(signed(key, "ES256", "current")))).status_code == 200
    for n in range(5):
        made_up = bearer(signed(key, "ES256", f"made-up-{n}"))
        assert (await post(client, LIST, made_up)).status_code == 401
    assert jwks.fetches == 1  # within JWKS_REFETCH_SECONDS of the last fetch


async def test_production_mode_has_no_graphiql_and_refuses_introspection(
    settings, start_app
) -> None:
    production = {"env": "production", "allow_anonymous": True}
    client = await start_app(
        settings.model_copy(update={**production, "cors_origins": "https://dash.example"})
    )
    page = await client.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 404  # no IDE page: a GET without a query is not an operation
    assert "graphiql" not in page.text.lower()
    body = (await post(client, "{ __schema { types { name } } }", {})).json()
    assert body["data"] is None
    assert "introspection" in body["errors"][0]["message"].lower()
    assert (await post(client, "{ suspendedRuns { total } }", {})).status_code == 200
    preflight = await client.options(
        "/graphql",
        headers={"origin": "https://dash.example", "access-control-request-method": "POST"},
    )
    assert preflight.headers["access-control-allow-origin"] == "https://dash.example"
    evil = await client.options(
        "/graphql",
        headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
    )
    assert "access-control-allow-origin" not in evil.headers


async def test_production_refuses_to_start_without_authentication(settings, start_app) -> None:
    production = settings.model_copy(update={"env": "production"})
    with pytest.raises(ConfigurationError) as refused:
        create_app(production)
    for setting in ("ENV=production", "API_KEYS_FILE", "JWT_SECRET", "ALLOW_ANONYMOUS"):
        assert setting in str(refused.value)
    client = await start_app(production.model_copy(update={"jwt_secret": SECRET_SETTING}))
    assert (await post(client, LIST, {})).status_code == 401
    assert (await post(client, LIST, bearer(token()))).status_code == 200


async def test_an_empty_key_file_still_needs_credentials(settings, start_app, tmp_path) -> None:
    key_file = tmp_path / "keys.json"
    key_file.write_text("[]")  # every key revoked: nobody gets in, not everybody
    client = await start_app(settings.model_copy(update={"api_keys_file": key_file}))
    assert (await post(client, LIST, {})).status_code == 401


async def test_an_oversized_body_is_refused_with_413(settings, start_app) -> None:
    client = await start_app(settings.model_copy(update={"max_request_bytes": 2048}))
    big = "{ suspendedRuns { total } }" + " " * 4000
    response = await client.post("/graphql", json={"query": big})
    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    assert (
        await client.post("/graphql", json={"query": "{ suspendedRuns { total } }"})
    ).status_code == 200


async def test_an_open_server_warns_at_start_up(settings, caplog) -> None:
    from tests.helpers import running_app

    with caplog.at_level(logging.WARNING, logger="suspended_runs.server.app"):
        async with running_app(settings) as client:
            assert (await client.get("/healthz")).status_code == 200
    assert "every caller is an anonymous admin" in caplog.text
