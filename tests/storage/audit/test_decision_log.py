"""Idempotency keys in the decision log (storage/audit/decision_log.py): one request's key
is found under each holder of the prefixes asked, whatever characters the key holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pymongo.asynchronous.database import AsyncDatabase

from suspended_runs.storage import Document
from suspended_runs.storage.audit.decision_log import DecisionLog
from suspended_runs.storage.types import DECISIONS_COLLECTION, IDEMPOTENCY_COLLECTION

LEASE = timedelta(minutes=1)
KEYS = ["k1", "k.1*(", "^k1$", "n\x00l", "k1\n", "k" * 100_000, "k" * 100_001]
"""A plain key, regular expressions' own characters, a NUL byte (which no BSON pattern
holds), a key that `$` would match before its final newline, and keys longer than a
pattern may be that begin alike."""


async def test_a_key_is_found_under_each_holder_of_the_prefixes_oldest_first(
    db: AsyncDatabase[Document],
) -> None:
    log = DecisionLog(db[DECISIONS_COLLECTION], db[IDEMPOTENCY_COLLECTION], timedelta(days=7))
    now = datetime.now(UTC)
    for key in KEYS:
        for days_ago, holder in enumerate(["jwt:Bob", "key:bob", "person:bob"]):
            kept = f"{holder}\x00{key}"
            assert await log.take_key(kept, "h", now - timedelta(days=days_ago), LEASE) is None
            await log.store_answer(kept, {"key": key})
        await log.take_key(f"jwt:eve\x00{key}", "h", now, LEASE)  # still answering: none yet
    for key in KEYS:
        found = await log.answers_ending(f"\x00{key}", ("key:", "jwt:"))
        assert [(holder, use.answer) for holder, use in found] == [
            ("key:bob", {"key": key}),
            ("jwt:Bob", {"key": key}),
        ]
