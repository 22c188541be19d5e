"""Keeping the embedded MongoDB up while `serve` runs.

The embedded server is a separate process, so it can die on its own (killed, out of
memory) or stop working while it runs: when its disk fills, WiredTiger panics and every
command fails until the process is restarted. The API's MongoDB client reconnects to the
same address by itself, so starting the server again on the same data and port heals the
API without a restart of its own; the follower resumes from its stored position.

A disk without room is not a broken database: starts that fail for lack of space are
retried until space is freed, and only starts that fail with room to spare count towards
giving up.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from prometheus_client import Counter

from suspended_runs.runtime.metrics import REGISTRY
from suspended_runs.server.embedded_mongodb import EmbeddedMongoDB
from suspended_runs.server.errors import EmbeddedMongoDBError

log = logging.getLogger(__name__)

RESTARTS = Counter(
    "suspended_runs_embedded_db_restarts",
    "Times `serve` started its embedded MongoDB again after it exited or its storage failed.",
    registry=REGISTRY,
)

_WATCH_EVERY = 0.5
"""Seconds between looks at the embedded server's process and log."""
_BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Seconds before each start in a row; the last repeats while the disk has no room."""
_GIVE_UP_AFTER = 5
"""Starts failed in a row, with room on the disk, before `serve` ends."""
LOW_SPACE_BYTES = 64 * 2**20
"""Free space on DATA_DIR's disk under which a database failure is taken for a full disk:
WiredTiger preallocates journal files of about 10 MB each, and cannot open or write
without room for a few of them."""


def free_bytes(path: Path) -> int | None:
    """Free space on the disk that holds `path`, for an unprivileged writer; None when it
    cannot be read."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


class EmbeddedSupervisor:
    """Watches a started `EmbeddedMongoDB` from a thread, and starts it again when it exits
    or its storage fails; `gave_up` says why it stopped trying (then `on_give_up` was
    called, once)."""

    def __init__(self, embedded: EmbeddedMongoDB, on_give_up: Callable[[], None]) -> None:
        self.embedded = embedded
        self.on_give_up = on_give_up
        self.gave_up: str | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="embedded-mongodb", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (before the server is stopped, so it is not started again)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def low_on_space(self) -> bool:
        free = free_bytes(self.embedded.data_dir)
        return free is not None and free < LOW_SPACE_BYTES

    def _watch(self) -> None:
        while not self._stopping.wait(_WATCH_EVERY):
            why = self._failure()
            if why is not None:
                self._restart(why)
            if self.gave_up is not None:
                return

    def _failure(self) -> str | None:
        process = self.embedded.process
        if process is None:
            return None
        code = process.poll()
        if code is not None:
            return f"it exited with status {code}"
        if self.embedded.panicked():
            return "its storage failed (a WiredTiger panic)"
        return None

    def _restart(self, why: str) -> None:
        log.error(
            "the embedded MongoDB stopped working; starting it again",
            extra={"why": why, "lowOnSpace": self.low_on_space()},
        )
        self.embedded.kill()
        failed = attempt = 0
        while not self._stopping.wait(_BACKOFF[min(attempt, len(_BACKOFF) - 1)]):
            attempt += 1
            error = self._start_again(attempt)
            if error is None:
                return
            if self.low_on_space():
                continue
            failed += 1
            log.error(
                "the embedded MongoDB did not start",
                extra={"attempt": attempt, "failedInARow": failed, "error": error},
            )
            if failed >= _GIVE_UP_AFTER:
                self.gave_up = (
                    f"the embedded MongoDB for DATA_DIR {self.embedded.data_dir} failed "
                    f"to start {failed} times in a row: {error}"
                )
                self.on_give_up()
                return

    def _start_again(self, attempt: int) -> str | None:
        """Start the server; None when it runs, else the first line of why not."""
        try:
            self.embedded.start()
        except EmbeddedMongoDBError as exc:
            if self.low_on_space():
                log.error(
                    "the embedded MongoDB cannot start: its disk is full; "
                    "retrying until space is freed",
                    extra={"dataDir": str(self.embedded.data_dir), "attempt": attempt},
                )
            return _one_line(str(exc))
        RESTARTS.inc()
        log.warning("the embedded MongoDB is running again", extra={"attempt": attempt})
        return None


def _one_line(message: str) -> str:
    """A start's error as one line: its first, and the last of the log tail it quotes."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[0] if len(lines) < 2 else f"{lines[0]} {lines[-1]}"
