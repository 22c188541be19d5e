"""The run index of a fresh database, its indexes made."""

from __future__ import annotations

from datetime import timedelta

import pytest

from suspended_runs.storage import RUNS_COLLECTION, RunIndex


@pytest.fixture
async def index(db) -> RunIndex:
    runs = RunIndex(db[RUNS_COLLECTION], retention=timedelta(days=7))
    await runs.ensure_indexes()
    return runs
