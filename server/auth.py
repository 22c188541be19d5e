"""Authentication: who a request comes from, by API key or by JWT bearer token.

API keys are kept as SHA-256 hashes in a JSON file (`API_KEYS_FILE`), each with a unique
name, a role and a scope; a request presents one in the `X-API-Key` header. JWTs come in
`Authorization: Bearer ...`, signed HS256 (`JWT_SECRET`), RS256 (`JWT_PUBLIC_KEY`), or
RS256/ES256 by a key of the issuer's JWKS (`JWT_JWKS_URL`, fetched again when a token
names a key id it does not hold: keys rotate), with expiry (give or take
`JWT_LEEWAY_SECONDS`), and audience and issuer where configured, checked. With neither
configured, everyone is an anonymous admin (server/app.py warns, or refuses in production).

No key, token or claim value is ever logged or returned: failures name a reason only.
Subjects are `key:<name>` for an API key (names are unique) and `jwt:<sub>` for a token:
credentials, never mistaken for each other. Behind each is a person (resolvers/people.py):
the `person` a key entry names (else the key itself), a token's subject, or whom
JWT_PERSONS maps that subject to (or its `<issuer> <subject>`: such a token is
`jwt:<issuer> <sub>`).

API key file:

    [{"name": "dashboard-eu", "sha256": "<hex of sha256(key)>", "role": "viewer",
      "resourceIds": ["tenant-eu"], "agentIds": null},
     {"name": "operator", "sha256": "<hex>", "role": "admin", "scope": "all",
      "person": "alice"}]

Scopes fail closed. A key entry's scope is its `resourceIds` and `agentIds`, or `"scope":
"all"`; a token's is its `JWT_SCOPE_CLAIM` claim (default `suspended_runs_scope`, apart
from OAuth2's space-separated `scope`): `"all"`, or `{"resourceIds": [...], "agentIds":
[...]}`. Credentials that name neither part and do not say "all" see no run at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt

from suspended_runs.resolvers import OPEN_ACCESS, Principal, Role, Scope
from suspended_runs.resolvers.people import (
    KEY_PREFIX,
    TOKEN_PREFIX,
    People,
    key_people,
    refusal,
    spellings,
    token_people,
)
from suspended_runs.runtime import ConfigurationError
from suspended_runs.server.errors import Unauthenticated

log = logging.getLogger(__name__)

API_KEY_HEADER = "x-api-key"
ALL = "all"
"""The scope of credentials that may see every run."""
DEFAULT_SCOPE_CLAIM = "suspended_runs_scope"
JWKS_ALGORITHMS = ("RS256", "ES256")
JWKS_REFETCH_SECONDS = 30.0
"""A token whose key id is not in the cached JWKS fetches it again (the issuer rotated its
keys), at most this often: made-up key ids do not make this server hammer the issuer."""
JWKS_LIFESPAN_SECONDS = 300.0
"""How long a fetched JWKS is used before it is fetched again."""


@dataclass(frozen=True, slots=True)
class JwtConfig:
    key: str | None = field(repr=False)
    """The HS256 secret, or the RS256 public key (PEM): never in a repr, so never logged.
    None when the keys come from `jwks_url`."""
    algorithm: str
    audience: str | None = None
    jwks_url: str | None = None
    """Where the issuer publishes its signing keys (a JWKS), RS256 or ES256."""
    issuer: str | None = None
    subject_claim: str = "sub"
    role_claim: str = "role"
    scope_claim: str = DEFAULT_SCOPE_CLAIM
    groups_claim: str = "groups"
    leeway: float = 30.0
    """Seconds of clock skew allowed on exp, nbf and iat."""
    persons: Mapping[str, str] = field(default_factory=dict, hash=False)
    """JWT_PERSONS: a token's subject, or `<issuer> <subject>`, -> the person it is (else
    the subject itself)."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    name: str
    digest: str
    role: Role | None
    scope: Scope
    groups: frozenset[str] = frozenset()
    person: str | None = None
    """The person who holds it; None: the key is its own person."""


def new_api_key() -> tuple[str, str]:
    """A fresh key and the SHA-256 hex digest that the key file keeps instead of it."""
    key = "sr_" + secrets.token_urlsafe(32)
    return key, hashlib.sha256(key.encode()).hexdigest()


def load_api_keys(path: Path) -> list[ApiKey]:
    try:
        entries = json.loads(path.read_text())
        keys = [
            ApiKey(
                name=str(entry["name"]),
                digest=str(entry["sha256"]).lower(),
                role=_role(entry.get("role")),
                scope=_entry_scope(entry),
                groups=_groups(entry.get("groups", [])),
                person=_person(entry.get("person")),
            )
            for entry in entries
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"API_KEYS_FILE {path}: {type(exc).__name__}: {exc}") from None
    _check_unique(keys, path)
    return keys


def _person(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("a key's person is a name")
    return value


def _check_unique(keys: list[ApiKey], path: Path) -> None:
    """A key's name is its subject (audit log, idempotency keys): two keys of one name, or
    one key listed twice, would be one caller, with whichever role came first."""
    names = [k.name for k in keys]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigurationError(f"API_KEYS_FILE {path}: key names must be unique: {twice}")
    digests = [k.digest for k in keys]
    same = sorted({k.name for k in keys if digests.count(k.digest) > 1})
    if same:
        raise ConfigurationError(f"API_KEYS_FILE {path}: these entries hold the same key: {same}")
    try:
        key_people((k.name, k.person) for k in keys)
    except ValueError as exc:
        raise ConfigurationError(f"API_KEYS_FILE {path}: {exc}") from None


class Authenticator:
    def __init__(self, api_keys: list[ApiKey] | None, jwt_config: JwtConfig | None) -> None:
        """`api_keys` None: no key file is configured. An empty one still needs credentials."""
        self.api_keys = api_keys
        self.jwt = jwt_config
        self.people = _people(api_keys, jwt_config)
        self.jwks = None
        if jwt_config is not None and jwt_config.jwks_url is not None:
            self.jwks = jwt.PyJWKClient(
                jwt_config.jwks_url,
                lifespan=JWKS_LIFESPAN_SECONDS,
                cooldown_duration=JWKS_REFETCH_SECONDS,
                timeout=10,
            )

    def reload_api_keys(self, path: Path) -> bool:
        """Read the key file again; whether its keys changed. A file that cannot be used
        keeps the keys loaded before (and is logged): a typo must not lock everyone out."""
        try:
            keys = load_api_keys(path)
        except ConfigurationError as exc:
            log.error("kept the API keys loaded before: %s", exc)
            return False
        changed = keys != self.api_keys
        self.api_keys = keys
        self.people = _people(keys, self.jwt)
        if changed:
            log.info("reloaded API_KEYS_FILE", extra={"keys": len(keys)})
        return changed

    @property
    def enabled(self) -> bool:
        return self.api_keys is not None or self.jwt is not None

    async def authenticate(self, headers: Mapping[str, str]) -> Principal:
        if not self.enabled:
            return OPEN_ACCESS
        api_key = headers.get(API_KEY_HEADER)
        authorization = headers.get("authorization", "")
        if api_key is not None:
            return self._by_api_key(api_key)
        if authorization[:7].lower() == "bearer " and self.jwt is not None:
            return await self._by_jwt(authorization[7:].strip())
        raise Unauthenticated("credentials are required: an X-API-Key or a Bearer token")

    def _by_api_key(self, key: str) -> Principal:
        digest = hashlib.sha256(key.encode()).hexdigest()
        # Every stored digest is compared, in constant time, so timing says nothing.
        found = [k for k in self.api_keys or [] if hmac.compare_digest(k.digest, digest)]
        if not found:
            raise Unauthenticated("the API key is not valid")
        return self._key_principal(found[0])

    def key_principal(self, name: str) -> Principal | None:
        """Who the key named `name` makes a caller now; None: no such key."""
        found = [k for k in self.api_keys or [] if k.name == name]
        return self._key_principal(found[0]) if found else None

    def _key_principal(self, key_entry: ApiKey) -> Principal:
        subject = f"{KEY_PREFIX}{key_entry.name}"
        return Principal(
            subject=subject,
            role=key_entry.role,
            scope=key_entry.scope,
            groups=key_entry.groups,
            person=self.people.person_of(subject),
        )

    async def _by_jwt(self, token: str) -> Principal:
        assert self.jwt is not None
        config = self.jwt
        try:
            key, algorithms = await self._verification_key(token)
            claims = jwt.decode(
                token,
                key,
                algorithms=algorithms,
                audience=config.audience,
                issuer=config.issuer,
                leeway=config.leeway,
                options={"require": ["exp", config.subject_claim]},
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(_refusal(exc)) from None
        try:
            scope = parse_scope(claims.get(config.scope_claim))
        except ValueError:
            raise Unauthenticated("the token's scope claim is malformed") from None
        try:
            groups = _groups(claims.get(config.groups_claim, []))
        except TypeError:
            raise Unauthenticated("the token's groups claim is malformed") from None
        subject = self._token_subject(claims)
        return Principal(
            groups=groups,
            subject=subject,
            person=self.people.person_of(subject),
            role=_role(claims.get(config.role_claim)),
            scope=scope,
            expires_at=float(claims["exp"]) + config.leeway,
        )

    def _token_subject(self, claims: Mapping[str, Any]) -> str:
        """The token's credential: `jwt:<sub>`, or `jwt:<issuer> <sub>` where JWT_PERSONS
        maps its issuer's subject (resolvers/people.py). A subject that is no name, or
        that reads as JWT_PERSONS' `<issuer> <subject>` (another issuer's), is refused."""
        assert self.jwt is not None
        sub = str(claims[self.jwt.subject_claim])
        if refusal(sub) is not None:
            raise Unauthenticated("the token's subject claim is not a name")
        credential = self.people.token_credential(claims.get("iss"), sub)
        if credential is None:
            raise Unauthenticated("the token's subject claim reads as an issuer and subject")
        return f"{TOKEN_PREFIX}{credential}"

    async def _verification_key(self, token: str) -> tuple[Any, list[str]]:
        """The key that must have signed `token`, and the algorithms it may be used with:
        the configured one, or the JWKS key that the token's `kid` names (fetched in a
        thread: PyJWKClient blocks)."""
        assert self.jwt is not None
        if self.jwks is None:
            return self.jwt.key, [self.jwt.algorithm]
        found = await asyncio.to_thread(self.jwks.get_signing_key_from_jwt, token)
        if found.algorithm_name not in JWKS_ALGORITHMS:
            raise jwt.InvalidAlgorithmError(found.algorithm_name)
        return found.key, [found.algorithm_name]


async def reload_api_keys_forever(
    authenticator: Authenticator,
    path: Path,
    interval: float,
    on_change: Callable[[], Awaitable[None]],
) -> None:
    """Every `interval` seconds, the key file read again when it changed on disk (a key
    added, revoked or re-scoped takes effect without a restart); `on_change` after a
    change of keys (open connections are checked against them)."""
    seen = _stamp(path)
    while True:
        await asyncio.sleep(interval)
        stamp = _stamp(path)
        if stamp != seen:
            seen = stamp
            if authenticator.reload_api_keys(path):
                await on_change()


def _people(api_keys: list[ApiKey] | None, jwt_config: JwtConfig | None) -> People:
    """Who stands behind the keys and tokens (both checked as they were loaded)."""
    entries = [(k.name, k.person) for k in api_keys or []]
    persons = jwt_config.persons if jwt_config else {}
    return People(key_people(entries), token_people(persons), spellings(entries, persons))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


_REFUSALS: list[tuple[type[jwt.PyJWTError], str]] = [
    (jwt.ExpiredSignatureError, "the token has expired"),
    (jwt.InvalidAudienceError, "the token is not meant for this server (audience)"),
    (jwt.InvalidIssuerError, "the token's issuer is not trusted"),
    (jwt.InvalidSignatureError, "the token's signature is not valid"),
    (jwt.PyJWKClientConnectionError, "the token's signing keys could not be fetched (JWKS)"),
]


def _refusal(exc: jwt.PyJWTError) -> str:
    """Why a token is refused, in words that hold none of its content."""
    for kind, reason in _REFUSALS:
        if isinstance(exc, kind):
            if kind is jwt.PyJWKClientConnectionError:
                log.warning("the JWKS at JWT_JWKS_URL could not be fetched")
            return reason
    return f"the token is not valid ({type(exc).__name__})"


def _role(value: Any) -> Role | None:
    try:
        return Role(value)
    except ValueError:
        return None  # authenticated, but may do nothing


def _groups(value: Any) -> frozenset[str]:
    """A list of group names (one name alone is taken as a list of one)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TypeError("groups are a list of names")
    return frozenset(value)


def parse_scope(value: Any) -> Scope:
    """A scope as credentials state it: "all", or an object of `resourceIds` and/or
    `agentIds`; one that names neither (absent, null, `{}`) is no run at all."""
    if value == ALL:
        return Scope.ALL
    if value is None:
        return Scope.NONE
    if not isinstance(value, dict):
        raise ValueError('a scope is "all" or an object of resourceIds and agentIds')
    resource_ids, agent_ids = _id_set(value.get("resourceIds")), _id_set(value.get("agentIds"))
    if resource_ids is None and agent_ids is None:
        return Scope.NONE
    return Scope(resource_ids=resource_ids, agent_ids=agent_ids)


def _entry_scope(entry: dict[str, Any]) -> Scope:
    """A key entry's scope: `"scope"` (as a token's claim), or its resourceIds/agentIds."""
    parts = {k: entry[k] for k in ("resourceIds", "agentIds") if entry.get(k) is not None}
    if "scope" in entry:
        if parts:
            raise ValueError(f"key {entry['name']!r}: give scope or resourceIds/agentIds, not both")
        return parse_scope(entry["scope"])
    return parse_scope(parts)


def _id_set(values: Any) -> frozenset[str] | None:
    if values is None:
        return None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError("a scope lists ids as an array of strings")
    return frozenset(values)
