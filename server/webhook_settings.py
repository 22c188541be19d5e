"""The settings of webhooks (PUBLIC_URL, WEBHOOK_*), beside the rest of the server's: how
deliveries are attempted and retried, where they may go, and what a payload carries."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field, field_validator

from suspended_runs.resolvers.context import WebhookRules
from suspended_runs.runtime.webhooks.addresses import OutboundRules
from suspended_runs.runtime.webhooks.attempt import AttemptRules
from suspended_runs.runtime.webhooks.payloads import PayloadRules
from suspended_runs.storage.events.webhooks import WebhookCaps


class WebhookSettings(BaseModel):
    """Mixed into `Settings`; read from the same environment."""

    public_url: str | None = Field(
        None, description="This server's public base URL, for links in webhooks (inboxUrl)."
    )
    webhook_retry_seconds: str = Field(
        "5,30,120,600,1800,3600,7200,14400,28800,43200",
        description="Comma-separated waits before each retry of a webhook delivery.",
    )
    webhook_timeout_seconds: float = Field(10.0, gt=0, description="Per delivery attempt.")
    webhook_rotation_seconds: float = Field(
        86_400.0, ge=0, description="How long a rotated webhook secret keeps signing."
    )
    webhook_expiring_seconds: float = Field(
        300.0, gt=0, description="approval.expiring is sent this long before an expiry."
    )
    webhook_max_args_bytes: int = Field(
        16_384, ge=0, description="Larger arguments are sent as {truncated, bytes}."
    )
    webhook_allowed_hosts: str = Field(
        "", description="Comma-separated hosts (*.example.com) and CIDRs webhooks may reach."
    )
    webhook_concurrency: int = Field(4, ge=1, le=64, description="Attempts at once per webhook.")
    webhook_max_in_flight: int = Field(
        64, ge=2, le=1024, description="Attempts at once in all (one creator's: half)."
    )
    webhook_max_per_creator: int = Field(
        20, ge=1, description="Webhooks one admin may have made; more are refused."
    )
    webhook_max_per_scope: int = Field(
        100, ge=1, description="Webhooks the admins of one scope (a tenant) may have made."
    )
    webhook_max_total: int = Field(500, ge=1, description="Webhooks on this server in all.")

    @field_validator("webhook_retry_seconds")
    @classmethod
    def _retry_schedule(cls, value: str) -> str:
        try:
            waits = [float(part) for part in _split(value)]
        except ValueError:
            raise ValueError("a comma-separated list of seconds") from None
        if not waits or any(wait <= 0 for wait in waits):
            raise ValueError("at least one wait, each a positive number of seconds")
        return value

    def delivery_rules(self, production: bool) -> AttemptRules:
        return AttemptRules(
            retry_seconds=tuple(float(part) for part in _split(self.webhook_retry_seconds)),
            timeout_seconds=self.webhook_timeout_seconds,
            concurrency=self.webhook_concurrency,
            outbound=self.outbound_rules(production),
            payloads=PayloadRules(self.public_url, self.webhook_max_args_bytes),
            max_in_flight=self.webhook_max_in_flight,
        )

    def webhook_rules(self, production: bool) -> WebhookRules:
        """What requests that make and change webhooks are held to."""
        caps = WebhookCaps(
            per_creator=self.webhook_max_per_creator,
            per_scope=self.webhook_max_per_scope,
            total=self.webhook_max_total,
        )
        rotation = timedelta(seconds=self.webhook_rotation_seconds)
        return WebhookRules(self.outbound_rules(production), rotation, caps)

    def outbound_rules(self, production: bool) -> OutboundRules:
        """Where posts may go: in production, public `https` and WEBHOOK_ALLOWED_HOSTS."""
        return OutboundRules.parse(production, _split(self.webhook_allowed_hosts))


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
