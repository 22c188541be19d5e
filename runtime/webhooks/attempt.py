"""One attempt to post a delivery, and what it means for the next: delivered, retried
on a schedule, or failed.

Any answer but 2xx, a timeout, a refused connection, or any other failure of the attempt
is retried by the schedule (`WEBHOOK_RETRY_SECONDS`): an attempt always ends in a result
to record. `429` with a `Retry-After` that reads as a finite wait sets the next attempt
within the schedule's bounds; `410 Gone` disables the webhook. Redirects are not
followed, and at most `_RESPONSE_BYTES` of an answer are read.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx

from suspended_runs.runtime.webhooks import payloads, signing
from suspended_runs.runtime.webhooks.addresses import IPAddress, OutboundRules, RefusedAddress
from suspended_runs.runtime.webhooks.payloads import PayloadRules
from suspended_runs.storage.events.deliveries import Delivery, DeliveryStatus
from suspended_runs.storage.events.webhooks import Webhook, WebhookFormat

_RESPONSE_BYTES = 64 * 1024
_ERROR_CHARACTERS = 300


@dataclass(frozen=True, slots=True)
class AttemptRules:
    retry_seconds: tuple[float, ...]
    timeout_seconds: float
    concurrency: int
    """Attempts under way at once per webhook."""
    outbound: OutboundRules
    payloads: PayloadRules
    max_in_flight: int = 64
    """Attempts under way at once in all."""


@dataclass(frozen=True, slots=True)
class Result:
    status: DeliveryStatus
    outcome: str
    """For metrics: delivered, retried, failed, refused."""
    status_code: int | None = None
    error: str | None = None
    next_attempt_at: datetime | None = None
    gone: bool = False


class Attempt:
    def __init__(
        self, client: httpx.AsyncClient, rules: AttemptRules, webhook: Webhook, delivery: Delivery
    ) -> None:
        self.client = client
        self.rules = rules
        self.webhook = webhook
        self.delivery = delivery

    async def make(self, now: datetime) -> Result:
        """Post once (the attempt is already recorded), signed with `now`; never raises."""
        try:
            return await self._make(now)
        except Exception as exc:  # whatever failed, the attempt is recorded and retried
            return self._retry(now, None, _error_text(exc))

    async def _make(self, now: datetime) -> Result:
        try:
            address = await self.rules.outbound.check(self.webhook.url)
        except RefusedAddress as exc:
            return self._retry(now, None, f"refused: {exc}", "refused")
        body = self._body(now)
        headers = signing.headers(
            self.webhook.signing_secrets(now), self.delivery.event_id, now, body
        )
        try:
            async with asyncio.timeout(self.rules.timeout_seconds):
                code, retry_after = await self._post(body, headers, address)
        except TimeoutError:
            return self._retry(now, None, f"no answer within {self.rules.timeout_seconds:g} s")
        except Exception as exc:  # any failure to post (httpx's, a URL it refuses) is retried
            return self._retry(now, None, _error_text(exc))
        if 200 <= code < 300:
            return Result(DeliveryStatus.DELIVERED, "delivered", code)
        if code == 410:
            return Result(
                DeliveryStatus.FAILED, "failed", code, "410 Gone: webhook disabled", gone=True
            )
        return self._retry(now, code, f"answered {code}", retry_after=retry_after)

    async def _post(
        self, body: str, headers: dict[str, str], address: IPAddress | None
    ) -> tuple[int, float | None]:
        url, extensions = httpx.URL(self.webhook.url), {}
        if address is not None:  # to the address checked, under the URL's name and TLS name
            headers = {**headers, "host": url.netloc.decode("ascii")}
            extensions = {"sni_hostname": url.host}
            url = url.copy_with(host=str(address))
        request = self.client.build_request(
            "POST", url, content=body.encode(), headers=headers, extensions=extensions
        )
        response = await self.client.send(request, stream=True)
        try:
            read = 0
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read >= _RESPONSE_BYTES:
                    break
        finally:
            await response.aclose()
        retry_after = _retry_after(response.headers.get("retry-after"), datetime.now(UTC))
        return response.status_code, retry_after if response.status_code == 429 else None

    def _body(self, now: datetime) -> str:
        d, rules = self.delivery, self.rules.payloads
        if self.webhook.format is WebhookFormat.SLACK:
            return payloads.slack_body(d.event, d.event_at, d.run, d.tool_call_id, now, rules)
        return payloads.standard_body(d.event, d.event_at, d.run, d.tool_call_id, rules)

    def _retry(
        self,
        now: datetime,
        code: int | None,
        error: str,
        outcome: str = "retried",
        *,
        retry_after: float | None = None,
    ) -> Result:
        schedule = self.rules.retry_seconds
        made = self.delivery.attempts + 1 - self.delivery.retry_base
        if made > len(schedule):
            return Result(DeliveryStatus.FAILED, "failed", code, error)
        wait = schedule[made - 1]
        if retry_after is not None:
            wait = min(max(retry_after, min(schedule)), max(schedule))
        return Result(DeliveryStatus.PENDING, outcome, code, error, now + timedelta(seconds=wait))


def _retry_after(value: str | None, now: datetime) -> float | None:
    """`Retry-After` as seconds: a number of seconds, or an HTTP date; None when it reads
    as no finite wait (`nan`, `inf`, a date out of range), which the schedule then sets."""
    if not value:
        return None
    seconds: float | None
    try:
        seconds = float(value)
    except ValueError:
        seconds = _seconds_until(value, now)
    if seconds is None or not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def _seconds_until(value: str, now: datetime) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return (when - now).total_seconds()
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


def _error_text(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:_ERROR_CHARACTERS]
