"""Every setting of the server, read from environment variables (documented in README.md)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from suspended_runs.resolvers import DecisionPolicy, RequestLimits
from suspended_runs.resolvers.review_policies import ReviewPolicies
from suspended_runs.runtime import ConfigurationError, MastraServers
from suspended_runs.schema import Limits
from suspended_runs.server.auth import DEFAULT_SCOPE_CLAIM, JwtConfig
from suspended_runs.server.hosts import LOOPBACK_HOSTS, host_pattern, is_loopback
from suspended_runs.server.langgraph_settings import LangGraphSettings
from suspended_runs.server.peers import Proxies
from suspended_runs.server.people_settings import PeopleSettings
from suspended_runs.server.review_settings import ReviewSettings
from suspended_runs.server.webhook_settings import WebhookSettings
from suspended_runs.storage import FollowMode

_HS256_BYTES = 32


class Settings(BaseSettings, LangGraphSettings, PeopleSettings, ReviewSettings, WebhookSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    mongodb_uri: str | None = Field(
        None, description="A MongoDB to use; unset: start the embedded one under DATA_DIR."
    )
    mongodb_db: str = "mastra"
    data_dir: Path = Path(".data")
    embedded_mongodb_port: int = Field(0, ge=0, le=65535, description="0: a free port.")
    embedded_mongodb_cache_size: str | None = Field(
        None,
        pattern=r"^[1-9][0-9]*[KMG]?$",
        description='WiredTiger cache of the embedded MongoDB ("4G", "512M"); unset: '
        "half of (RAM - 1 GB), at least 256 MB, as MongoDB's own default.",
    )
    sync_mode: FollowMode = FollowMode.AUTO
    sync_poll_interval: float = Field(0.5, gt=0, description="Seconds, when polling.")
    sync_poll_overlap_seconds: float = Field(
        300.0, gt=0, description="Clock skew between snapshot writers that polling tolerates."
    )
    follower_lease_seconds: float = Field(
        5.0, gt=0, description="The snapshot follower's lease; renewed every third of it."
    )
    retention_days: float = Field(7.0, gt=0)
    max_query_depth: int = Field(10, ge=1)
    max_query_tokens: int = Field(2000, ge=1)
    max_query_aliases: int = Field(30, ge=0)
    query_cache_bytes: int = Field(
        16 * 1024 * 1024, ge=0, description="Of parsed and validated documents, in all."
    )
    query_cache_size: int | None = Field(
        None, ge=1, description="Deprecated (QUERY_CACHE_BYTES): at most this many documents."
    )
    graphiql: bool = True
    metrics_max_operations: int = Field(
        200, ge=0, description="Operation names labelled in /metrics; the rest are other."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    agents: str = Field(
        "suspended_runs.runtime.demo:agents",
        description="module:attribute of a mapping of agent ids to pydantic_ai.Agent.",
    )
    claim_lease_seconds: float = Field(
        60.0, gt=0, description="A continued run's lease; renewed every third of it."
    )
    actor_header: str = Field("x-actor", description="Request header naming who decides.")
    instance_id: str | None = Field(None, description="Names this process in claims.")
    mastra_url: str | None = Field(None, description="Base URL of the Mastra server.")
    mastra_agent_urls: dict[str, str] = Field(
        default_factory=dict, description="JSON: agent id -> base URL, over MASTRA_URL."
    )
    mastra_headers: dict[str, str] = Field(
        default_factory=dict, description="JSON: headers for Mastra (its auth)."
    )
    mastra_timeout_seconds: float = Field(60.0, gt=0)
    decision_timeout_seconds: float | None = Field(
        None, gt=0, description="An approval pending this long is declined; unset: never."
    )
    decision_timeouts: dict[str, float] = Field(
        default_factory=dict,
        description="JSON: agent id -> seconds, over DECISION_TIMEOUT_SECONDS.",
    )
    bulk_decisions_max: int = Field(100, ge=1, le=1000)
    max_rows_per_request: int = Field(2000, ge=1, description="Rows read per request, in all.")
    max_mutations_per_request: int = Field(10, ge=1)
    max_text_bytes: int = Field(8192, ge=1, description="Of a reason or a prompt.")
    max_json_bytes: int = Field(65536, ge=1, description="Of resumeData or editedArgs.")
    bulk_decisions_concurrency: int = Field(8, ge=1, le=64)
    env: Literal["development", "production"] = "development"
    allow_anonymous: bool = Field(
        False, description="Production without API keys or JWT: everyone an anonymous admin."
    )
    cors_origins: str = Field("", description="Comma-separated origins allowed by CORS.")
    cors_allow_headers: str = Field(
        "", description="Comma-separated request headers CORS allows besides the defaults."
    )
    persisted_queries_max: int = Field(
        10_000, ge=1, description="Automatic persisted queries kept (least recently used go)."
    )
    persisted_queries_per_scope: int = Field(
        1_000, ge=1, description="Of those, kept for one scope's callers (the same way)."
    )
    persisted_queries_per_minute: int = Field(
        60, ge=1, description="New documents one scope may register a minute, per instance."
    )
    persisted_queries_only: bool = Field(
        False, description="Trusted documents: run only those in PERSISTED_QUERIES_FILE."
    )
    persisted_queries_file: Path | None = Field(
        None, description="An Apollo persisted-query manifest (persisted-query-manifest.json)."
    )
    max_batch_operations: int = Field(10, ge=1, description="Operations in one batched request.")
    max_subscriptions_per_caller: int = Field(
        20, ge=1, description="Subscriptions one caller may hold open at once, per instance."
    )
    allowed_hosts: str = Field(
        "", description="Comma-separated Host names served (*.example.com, * for any)."
    )
    max_request_bytes: int = Field(1_048_576, ge=1024)
    header_timeout_seconds: float = Field(
        10.0, gt=0, description="A request's headers must arrive within this (else 408)."
    )
    body_timeout_seconds: float = Field(
        30.0, gt=0, description="A request's body must arrive within this of its headers."
    )
    body_min_bytes_per_second: float = Field(
        1024.0, ge=0, description="A body's least average rate, after its first second."
    )
    max_connections_per_peer: int = Field(
        256, ge=1, description="Open connections (HTTP, WebSocket) from one address."
    )
    max_connections: int | None = Field(
        None, ge=1, description="Open connections in all; unset: 3/4 of the descriptor limit."
    )
    forwarded_allow_ips: str = Field(
        "", description="Comma-separated proxies (IPs, CIDRs, *) whose X-Forwarded-For is read."
    )
    database_deadline_seconds: float = Field(
        5.0, gt=0, description="A request's wait for the database (else DATABASE_UNAVAILABLE)."
    )
    otel_exporter_otlp_endpoint: str | None = Field(
        None, description="Where to send OpenTelemetry traces (OTLP over HTTP); unset: none."
    )
    api_keys_file: Path | None = None
    api_keys_reload_seconds: float = Field(
        5.0, ge=0, description="How often API_KEYS_FILE is checked for changes (0: never)."
    )
    jwt_secret: SecretStr | None = Field(None, description="HS256 shared secret.")
    jwt_public_key: str | None = Field(None, description="RS256 public key (PEM).")
    jwt_jwks_url: str | None = Field(
        None, description="URL of the issuer's JWKS (RS256/ES256 keys, rotated)."
    )
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    jwt_leeway_seconds: float = Field(30.0, ge=0, description="Clock skew allowed on exp.")
    jwt_subject_claim: str = "sub"
    jwt_role_claim: str = "role"
    jwt_scope_claim: str = Field(
        DEFAULT_SCOPE_CLAIM, description='Claim of the scope: "all" or {resourceIds, agentIds}.'
    )
    jwt_groups_claim: str = Field("groups", description="Claim of the caller's groups.")

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("mongodb_uri", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: object) -> object:
        if isinstance(value, str) and value.strip() and not value.startswith("mongodb"):
            raise ValueError("must start with mongodb:// or mongodb+srv://")  # not a long wait
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("decision_timeouts")
    @classmethod
    def _positive_timeouts(cls, value: dict[str, float]) -> dict[str, float]:
        if any(seconds <= 0 for seconds in value.values()):
            raise ValueError("every timeout must be a positive number of seconds")
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _host_patterns(cls, value: str) -> str:
        for pattern in _split(value):
            host_pattern(pattern)
        return value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxies(cls, value: str) -> str:
        Proxies.parse(value)
        return value

    @field_validator("jwt_jwks_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError("the JWKS is fetched over http:// or https://")
        return value

    @model_validator(mode="after")
    def _strong_in_production(self) -> Settings:
        # RFC 7518 (3.2): an HS256 key is at least as long as its hash, 32 bytes; a short
        # one can be guessed offline from any one token. After validation, so that it sees
        # ENV whatever the order of the fields.
        secret = self.jwt_secret.get_secret_value() if self.jwt_secret else None
        if self.production and secret is not None and len(secret.encode()) < _HS256_BYTES:
            raise ValueError(
                f"JWT_SECRET: an HS256 secret needs at least {_HS256_BYTES} bytes in production"
            )
        return self

    @model_validator(mode="after")
    def _review_policies(self) -> Settings:
        policies = ReviewPolicies.load(self.review_policies, self.review_policies_file)
        open_server = self.api_keys_file is None and self.jwt_config is None
        needing = policies.needing_authentication
        if open_server and needing:
            raise ValueError(
                f"{needing[0].name}: approvals over 1 or reviewers need authentication "
                "(API_KEYS_FILE or a JWT key): on an open server anyone can claim any name"
            )
        return self

    @model_validator(mode="after")
    def _one_jwt_key(self) -> Settings:
        if sum(bool(k) for k in (self.jwt_secret, self.jwt_public_key, self.jwt_jwks_url)) > 1:
            raise ValueError(
                "set one of JWT_SECRET (HS256), JWT_PUBLIC_KEY (RS256) or JWT_JWKS_URL"
            )
        return self

    @property
    def production(self) -> bool:
        return self.env == "production"

    @property
    def cors_origin_list(self) -> list[str]:
        return _split(self.cors_origins)

    @property
    def cors_header_list(self) -> list[str]:
        return [name.lower() for name in _split(self.cors_allow_headers)]

    @property
    def allowed_host_list(self) -> list[str] | None:
        """The Host names served: ALLOWED_HOSTS; unset, the loopback names when serving on
        a loopback address; else None (create_app refuses it in production)."""
        given = [host_pattern(pattern) for pattern in _split(self.allowed_hosts)]
        if given:
            return given
        return list(LOOPBACK_HOSTS) if is_loopback(self.host) else None

    @property
    def jwt_config(self) -> JwtConfig | None:
        secret = self.jwt_secret.get_secret_value() if self.jwt_secret else None
        key, algorithm = (secret, "HS256") if secret else (self.jwt_public_key, "RS256")
        if not key and not self.jwt_jwks_url:
            return None
        return JwtConfig(
            key=key or None,
            algorithm=algorithm,
            jwks_url=self.jwt_jwks_url,
            audience=self.jwt_audience,
            issuer=self.jwt_issuer,
            subject_claim=self.jwt_subject_claim,
            role_claim=self.jwt_role_claim,
            scope_claim=self.jwt_scope_claim,
            groups_claim=self.jwt_groups_claim,
            leeway=self.jwt_leeway_seconds,
            persons=self.jwt_persons,
        )

    @property
    def request_limits(self) -> RequestLimits:
        return RequestLimits(
            max_rows=self.max_rows_per_request,
            max_mutations=self.max_mutations_per_request,
            max_text_bytes=self.max_text_bytes,
            max_json_bytes=self.max_json_bytes,
        )

    @property
    def decision_policy(self) -> DecisionPolicy:
        seconds = self.decision_timeout_seconds
        return DecisionPolicy(
            timeout=timedelta(seconds=seconds) if seconds is not None else None,
            agent_timeouts={a: timedelta(seconds=s) for a, s in self.decision_timeouts.items()},
            bulk_max=self.bulk_decisions_max,
            bulk_concurrency=self.bulk_decisions_concurrency,
            # Read again (not kept from validation): a copy with other policies reads its own.
            reviews=ReviewPolicies.load(self.review_policies, self.review_policies_file),
            review_max=self.review_max,
            confirm_every_approval=self.confirm_every_approval,
        )

    @property
    def mastra_servers(self) -> MastraServers:
        return MastraServers(
            default_url=self.mastra_url,
            agent_urls=self.mastra_agent_urls,
            headers=self.mastra_headers,
            timeout_seconds=self.mastra_timeout_seconds,
        )

    @property
    def claim_lease(self) -> timedelta:
        return timedelta(seconds=self.claim_lease_seconds)

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    @property
    def limits(self) -> Limits:
        return Limits(
            max_depth=self.max_query_depth,
            max_tokens=self.max_query_tokens,
            max_aliases=self.max_query_aliases,
            cache_bytes=self.query_cache_bytes,
            cache_size=self.query_cache_size,
        )


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def load_settings(**overrides: object) -> Settings:
    """The settings from the environment, with `overrides` (command-line flags) over them,
    validated alike. Raises ConfigurationError naming each setting it cannot use."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]).upper()
            message = error["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}" if where else message)
        raise ConfigurationError("; ".join(problems)) from None
