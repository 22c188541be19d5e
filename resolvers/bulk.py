"""`decideToolCalls`: many decisions in one request, each answered in order exactly as its
own mutation would answer it, continued concurrently up to a bound."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.decisions import DecisionRequest, decide
from suspended_runs.resolvers.errors import BadUserInput
from suspended_runs.resolvers.outcomes import DecisionOutcome
from suspended_runs.storage import Action, deadlines


async def decide_many(
    context: Context, requests: Sequence[DecisionRequest]
) -> list[DecisionOutcome]:
    """Every request checked first (a bad one refuses the whole list, nothing applied);
    then each decided, at most `policy.bulk_concurrency` at a time."""
    limit = context.policy.bulk_max
    if not 1 <= len(requests) <= limit:
        raise BadUserInput(f"decisions must hold 1 to {limit} items", argument="decisions")
    for i, request in enumerate(requests):
        _check(request, f"decisions[{i}]")
    gate = asyncio.Semaphore(context.policy.bulk_concurrency)

    async def one(request: DecisionRequest) -> DecisionOutcome:
        async with gate:
            deadlines.restart()  # its turn came: its database work starts now
            return await decide(context, request)

    return list(await asyncio.gather(*(one(request) for request in requests)))


def _check(request: DecisionRequest, where: str) -> None:
    """The fields its own mutation's input would have: no more, none missing."""
    if request.edited_args is not None and request.action is not Action.APPROVE:
        raise BadUserInput("editedArgs goes with APPROVE only", argument=f"{where}.editedArgs")
    if request.reason is not None and request.action is not Action.DECLINE:
        raise BadUserInput("reason goes with DECLINE only", argument=f"{where}.reason")
    if (request.resume_data is not None) != (request.action is Action.RESUME):
        raise BadUserInput(
            "resumeData goes with RESUME, and RESUME needs it", argument=f"{where}.resumeData"
        )
