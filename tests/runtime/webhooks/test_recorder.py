"""The recorder (runtime/webhooks/recorder.py) writes where attempts left their deliveries,
a batch at a time: a server killed (`kill -9`) mid-burst, with attempts begun and ends not
yet written, delivers every event at least once after a restart."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pymongo import MongoClient

from suspended_runs.storage.types import SNAPSHOTS_COLLECTION, Document
from tests.helpers import Server, suspended_doc
from tests.webhook_receiver import Receiver

CREATE = """mutation($input: CreateWebhookInput!) { createWebhook(input: $input) {
  ... on WebhookCreated { secret } } }"""
BURST, BATCH = 300, 100


def test_a_burst_killed_at_a_third_delivered_is_all_delivered_after_a_restart(
    tmp_path: Path, mongo_uri: str
) -> None:
    """300 Mastra runs suspended, written 100 a write by this process; the server is
    killed once a third are delivered, and started again: every event is delivered, and
    the only repeats are attempts the kill cut short or left unrecorded."""
    db_name = f"burst_{tmp_path.name[-8:]}"
    env = {"MONGODB_URI": mongo_uri, "MONGODB_DB": db_name, "WEBHOOK_TIMEOUT_SECONDS": "1"}
    server = Server(tmp_path / "data", env)
    with Receiver() as receiver, MongoClient[Document](mongo_uri) as writer:
        server.start()
        try:
            made = server.query(
                CREATE, {"input": {"url": receiver.url, "events": ["RUN_SUSPENDED"]}}
            )
            snapshots = writer[db_name][SNAPSHOTS_COLLECTION]
            for first in range(0, BURST, BATCH):
                runs = range(first, first + BATCH)
                snapshots.insert_many([suspended_doc(f"burst-{n}", "burst-agent") for n in runs])
            _wait(lambda: len(receiver.received) >= BURST // 3, 60)
            assert server.signal(signal.SIGKILL) == -9
            at_the_kill = len(receiver.received)
            server.start()
            _wait(lambda: len({r.message_id for r in receiver.received}) >= BURST, 90)
        finally:
            if server.process is not None:
                server.stop()
    events = receiver.events(made["data"]["createWebhook"]["secret"])
    assert {event["data"]["run"]["runId"] for event in events} == {
        f"burst-{n}" for n in range(BURST)
    }
    repeats = sum(n - 1 for n in Counter(r.message_id for r in receiver.received).values())
    print(f"delivered {at_the_kill} before the kill; {repeats} repeated after the restart")
    assert repeats <= BURST - BURST // 3  # what the kill cut short; never the whole burst


def _wait(check: Callable[[], bool], within: float) -> None:
    end = time.monotonic() + within
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)
