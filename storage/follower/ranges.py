"""The ranges of `run_id` a full reconcile reads the snapshots by, and what they tell of
how many there are.

The embedded server decodes every match of a query before it answers the first (one
query over every snapshot holds them all in memory at once), so a reconcile asks
by ranges of `run_id`: a UUID's first two hex digits, 256 ranges (the first and last open,
so every id falls in exactly one). How many to ask at once is learned as they are read,
so no count comes first (the embedded server reads every document to count a
collection): a range that held few widens the next, up to all that
is left. Mastra's run ids are random UUIDs, so the share of ranges read is the share of
the runs read, which estimates how many there are for `/readyz`'s progress.
"""

from __future__ import annotations

from suspended_runs.storage.types import Document

PREFIXES = 256
_MATCHES_PER_QUERY = 1_000
"""About how many documents one query of a reconcile may match."""


class RunIdRanges:
    def __init__(self) -> None:
        self.read = 0
        """Prefixes read so far (of `PREFIXES`)."""
        self.matched = 0
        """Documents the ranges read so far matched."""
        self.kept = 0
        """Of those, the ones the reconcile looked at (candidates)."""
        self._width = 1

    @property
    def done(self) -> bool:
        return self.read >= PREFIXES

    def query(self) -> Document:
        """The next range to read, as a query's `run_id` condition (none for all): from the
        last prefix read, as many as the density seen so far says fill a query (the first
        range open below, the last open above)."""
        low, high = self.read, min(self.read + self._width, PREFIXES)
        condition: Document = {}
        if low > 0:
            condition["$gte"] = f"{low:02x}"
        if high < PREFIXES:
            condition["$lt"] = f"{high:02x}"
        return {"run_id": condition} if condition else {}

    def saw(self, matched: int, kept: int) -> None:
        """The range `query` gave was read: it matched `matched` documents, `kept` of them
        looked at. The next range is as wide as `_MATCHES_PER_QUERY` would fill at the
        density seen so far."""
        self.read = min(self.read + self._width, PREFIXES)
        self.matched += matched
        self.kept += kept
        per_prefix = self.matched / self.read
        fits = int(_MATCHES_PER_QUERY / per_prefix) if per_prefix else PREFIXES
        self._width = max(1, min(fits, 2 * self._width if matched else PREFIXES))

    def estimate(self) -> int | None:
        """About how many documents the reconcile will look at in all (None before the
        first range is read)."""
        if not self.read:
            return None
        return round(self.kept * PREFIXES / self.read)
