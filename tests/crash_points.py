"""`suspended-runs serve` that kills itself (SIGKILL) at one point of a decision, for tests
of what a crash there leaves: the process dies with its work half done, as it would on a
power cut or the OOM killer, never to run a line more. `CRASH_AT` names the point:

- `claim-written`: a decision's claim is written, with its events in the same update, and
  the events are not yet moved to the outbox;
- `event-written`: the events are in the outbox, and no runtime has the run yet;
- `continuation-started`: a runtime (Python, Mastra or LangGraph) was handed the claimed
  run.

Run as `python -m tests.crash_points serve` (`tests.helpers.Server(module=...)`).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, NoReturn

from suspended_runs.runtime.langgraph import LangGraphRuntime
from suspended_runs.runtime.mastra import MastraRuntime
from suspended_runs.runtime.python_runtime import PythonRuntime
from suspended_runs.server.cli import main
from suspended_runs.storage.index.claims import ClaimWrites
from suspended_runs.storage.types import Document

POINTS = ("claim-written", "event-written", "continuation-started")


def _die() -> NoReturn:
    sys.stderr.write(f"crash_points: killed at {os.environ['CRASH_AT']}\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("SIGKILL returned")


def _a_decisions(held: list[Document]) -> bool:
    return any(event.get("type") == "toolcall.decided" for event in held)


def _arm(point: str) -> None:
    announce = ClaimWrites.announce

    async def before_the_move(self: ClaimWrites, run_id: str, held: list[Document]) -> None:
        if _a_decisions(held):
            _die()
        await announce(self, run_id, held)

    async def after_the_move(self: ClaimWrites, run_id: str, held: list[Document]) -> None:
        await announce(self, run_id, held)
        if _a_decisions(held):
            _die()

    async def handed_over(self: Any, continuation: Any) -> NoReturn:
        _die()

    if point == "claim-written":
        ClaimWrites.announce = before_the_move  # type: ignore[method-assign]
    elif point == "event-written":
        ClaimWrites.announce = after_the_move  # type: ignore[method-assign]
    elif point == "continuation-started":
        PythonRuntime.continue_run = handed_over  # type: ignore[method-assign]
        MastraRuntime.continue_run = handed_over  # type: ignore[method-assign]
        LangGraphRuntime.continue_run = handed_over  # type: ignore[method-assign]
    else:
        raise SystemExit(f"CRASH_AT is one of {', '.join(POINTS)}, not {point!r}")


if __name__ == "__main__":
    _arm(os.environ["CRASH_AT"])
    sys.exit(main())
