"""Standard Webhooks' signature: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, by
the package receivers verify with, so what is sent is what they check."""

from __future__ import annotations

from datetime import datetime

from standardwebhooks.webhooks import Webhook


def signature(secrets: list[str], message_id: str, timestamp: datetime, body: str) -> str:
    """The `webhook-signature` header: one signature per secret (two during a rotation),
    space-separated."""
    return " ".join(Webhook(secret).sign(message_id, timestamp, body) for secret in secrets)


def headers(secrets: list[str], message_id: str, timestamp: datetime, body: str) -> dict[str, str]:
    """The three headers of one attempt, signed with its own timestamp."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature(secrets, message_id, timestamp, body),
        "content-type": "application/json",
    }
