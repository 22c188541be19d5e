"""`assignedToMe`: the review policies' assignment of one caller, spelled out for the index.

A call is assigned to whoever its policy's `reviewers` name, and, once its run has waited
`escalateAfterSeconds`, to `escalateTo` as well (resolvers/review_policies.py). The index
holds no assignment (policies are settings, and escalation moves with the clock): each
list asks for the agents and tools the caller's policies cover, read from the tools every
indexed call has named, in bands of `suspendedAt` (storage/index/assignment.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from suspended_runs.resolvers.access import Principal
from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.review_policies import ReviewPolicies, compared
from suspended_runs.storage import AssignedBand, RunFilter
from suspended_runs.storage.index.assignment import tool_order

_ALWAYS = None
"""The delay of a call assigned as soon as its run waits (named among `reviewers`)."""


async def narrowed(context: Context, run_filter: RunFilter) -> RunFilter:
    """`run_filter` with what is the caller's spelled out: whose reviews are theirs and,
    when it asks for it, its assignment (the review policies' bands, and the names a run
    handed over names, resolvers/hand_over.py)."""
    run_filter = dataclasses.replace(run_filter, reviewer=context.person)
    if not run_filter.assigned_to_me:
        return run_filter
    tools = await context.storage.runs.tools()
    principal = context.principal
    bands = assigned_bands(context.policy.reviews, tools, principal, datetime.now(UTC))
    handed = principal.names if principal.authenticated else frozenset()
    return dataclasses.replace(run_filter, assigned=bands, handed_to=handed)


def assigned_bands(
    policies: ReviewPolicies,
    tools: Iterable[tuple[str, str | None]],
    principal: Principal,
    now: datetime,
) -> tuple[AssignedBand, ...]:
    """The bands of runs with a pending call assigned to `principal` at `now`: per agent,
    the tools it is assigned from the start and those it is assigned once escalated."""
    if not principal.authenticated:
        return ()  # a policy's names mean nothing on an open server: nobody is assigned
    names = principal.names
    delays: dict[str, dict[timedelta | None, set[str | None]]] = {}
    for agent_id, tool_name in tools:
        policy = policies.match(agent_id, tool_name)
        if policy is None:
            continue
        delay: timedelta | None
        if names & compared(policy.reviewers or ()):
            delay = _ALWAYS
        elif names & compared(policy.escalate_to) and policy.escalate_after is not None:
            delay = policy.escalate_after
        else:
            continue
        delays.setdefault(agent_id, {}).setdefault(delay, set()).add(tool_name)
    return tuple(
        band for agent_id in sorted(delays) for band in _bands(agent_id, delays[agent_id], now)
    )


def _bands(
    agent_id: str, delays: dict[timedelta | None, set[str | None]], now: datetime
) -> list[AssignedBand]:
    """Disjoint bands of one agent's runs by how long they have waited: the runs of each
    band hold the tools assigned after its delay, and those of every shorter delay."""
    bands = []
    tools: set[str | None] = set(delays.get(_ALWAYS, ()))
    upper: datetime | None = None  # the newest suspension a band holds (None: open above)
    for delay in sorted(d for d in delays if d is not None):
        cutoff = now - delay
        if tools:
            bands.append(_band(agent_id, tools, cutoff, upper))
        tools |= delays[delay]
        upper = cutoff
    if tools:
        bands.append(_band(agent_id, tools, None, upper))
    return bands


def _band(
    agent_id: str, tools: set[str | None], after: datetime | None, upto: datetime | None
) -> AssignedBand:
    ordered = tuple(sorted(tools, key=tool_order))
    return AssignedBand(agent_id, ordered, suspended_after=after, suspended_upto=upto)
