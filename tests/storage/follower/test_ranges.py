"""The ranges of run_id a reconcile reads by: every id in exactly one, as wide as the
density seen allows, and an estimate of how many there are."""

from __future__ import annotations

import random
import uuid

from suspended_runs.storage.follower.ranges import PREFIXES, RunIdRanges


def _in(run_id: str, query: dict[str, dict[str, str]]) -> bool:
    condition = query.get("run_id", {})
    return condition.get("$gte", "") <= run_id and (
        "$lt" not in condition or run_id < condition["$lt"]
    )


def _read_all(ids: list[str], ranges: RunIdRanges) -> list[list[str]]:
    """The ids each range held, reading them as a reconcile does."""
    held = []
    while not ranges.done:
        query = ranges.query()
        found = [run_id for run_id in ids if _in(run_id, query)]
        held.append(found)
        ranges.saw(len(found), len(found))
    return held


def test_every_run_id_falls_in_exactly_one_range() -> None:
    rng = random.Random(3)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(3000)]
    ids += ["", "-x", "0", "00", "01", "Zed", "9f-1", "ff", "ffff", "g-run", "~", "é"]
    held = _read_all(ids, RunIdRanges())
    assert sorted(run_id for found in held for run_id in found) == sorted(ids)


def test_ranges_are_as_wide_as_the_density_allows() -> None:
    """3,000 random ids (about 12 a prefix): ranges of about 1,000, never much more; an
    empty collection: two queries (the first prefix, then the rest)."""
    rng = random.Random(5)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(3000)]
    held = _read_all(ids, RunIdRanges())
    assert max(len(found) for found in held) < 1_500
    assert len(held) < 12
    assert len(_read_all([], RunIdRanges())) == 2


def test_the_estimate_comes_near_as_ranges_are_read_and_is_exact_at_the_end() -> None:
    rng = random.Random(9)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(20_000)]
    ranges = RunIdRanges()
    assert ranges.estimate() is None
    estimates = []
    while not ranges.done:
        query = ranges.query()
        found = sum(1 for run_id in ids if _in(run_id, query))
        ranges.saw(found, found // 2)  # half of them looked at (the others settled)
        estimates.append(ranges.estimate())
    assert all(e is not None and 7_000 <= e <= 13_000 for e in estimates)  # one prefix: ~80
    assert all(e is not None and 9_000 <= e <= 11_000 for e in estimates[1:])
    assert estimates[-1] == ranges.kept and ranges.read == PREFIXES
