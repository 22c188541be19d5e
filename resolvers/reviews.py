"""A decision under review: the call's argsHash, then its review policy, if one matches.

What the approver saw: `expectedArgsHash`, when given, must be the call's argsHash now, or
nothing is applied (StaleDecision); under a quorum, once the call's arguments were edited,
an approval must give it (unless the policy says `requireArgsHash: false`). Then the first
policy (resolvers/review_policies.py) that matches the run's agent and the call's tool:
only its reviewers (and those the run was handed to, resolvers/hand_over.py) decide;
with `forbidSelfApproval` the run's starter does not approve; with `approvals` over 1,
each approval before the Nth is recorded (storage/approvals.py) and answered
ApprovalRecorded, and the Nth continues the run through the same claim as any decision.
`resumeRun` is outside policies (an operator's action).

People, not credentials (resolvers/people.py): the starter is compared as a person, and
approvals are counted once per person, however many keys and tokens that person holds.
A refusal names the policy by its `name` and lists no reviewer: it tells a caller only
that they are not among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from suspended_runs.resolvers.context import Context
from suspended_runs.resolvers.outcomes import (
    ApprovalRecorded,
    DecisionOutcome,
    NotAReviewer,
    SelfApproval,
    StaleDecision,
)
from suspended_runs.resolvers.review_policies import ReviewPolicy
from suspended_runs.resolvers.reviewing import handed_to_caller
from suspended_runs.storage import Action, RunEntry, ToolCall
from suspended_runs.storage.approvals import Approval, CallApprovals
from suspended_runs.storage.index.entry import args_hash


@dataclass(frozen=True, slots=True)
class Proceed:
    """Apply the decision; with a quorum's edited arguments when there are some."""

    edited_args: Any = None


async def review(
    context: Context,
    entry: RunEntry,
    call: ToolCall,
    action: Action,
    expected_args_hash: str | None,
    edited_args: Any,
    now: datetime,
) -> DecisionOutcome | Proceed | None:
    """What becomes of this decision; None when another approval or edit changed the
    call's approvals meanwhile (look again)."""
    policy = context.policy.reviews.match(entry.agent_id, call.tool_name)
    quorum = policy is not None and policy.approvals > 1 and action is Action.APPROVE
    call_id = call.tool_call_id or ""
    recorded = await context.storage.approvals.get(entry.run_id, call_id) if quorum else None
    model_hash = args_hash(call.args)
    current = recorded.args_hash if recorded else model_hash
    if expected_args_hash is not None and expected_args_hash.lower() != current:
        message = f"the arguments of {call_id} changed since they were seen: look again"
        return StaleDecision(entry.run_id, call_id, current, message, entry)
    if expected_args_hash is None and _edited_unseen(policy, recorded):
        message = (
            f"the arguments of {call_id} were edited: approve them with expectedArgsHash, "
            "their argsHash as you saw it"
        )
        return StaleDecision(entry.run_id, call_id, current, message, entry)
    if policy is None or action is Action.RESUME:
        return Proceed()
    refused = _refusal(context, policy, entry, call_id, action, now)
    if refused is not None or not quorum:
        return refused or Proceed()
    return await _count(context, policy, entry, call_id, recorded, model_hash, edited_args, now)


def _edited_unseen(policy: ReviewPolicy | None, recorded: CallApprovals | None) -> bool:
    """Whether an approval must say which arguments it approves: once a quorum's call was
    edited, an approval by run id alone (a script approving again) may be of arguments
    its author never saw. `requireArgsHash: false` lets machine approvers go on."""
    edited = recorded is not None and recorded.edited
    return edited and policy is not None and policy.requires_args_hash


def _refusal(
    context: Context,
    policy: ReviewPolicy,
    entry: RunEntry,
    call_id: str,
    action: Action,
    now: datetime,
) -> DecisionOutcome | None:
    allowed = policy.allows(context.principal.names, entry.suspended_at, now)
    if not allowed and not handed_to_caller(context, entry):
        message = f"{policy.label} names other reviewers of {call_id}"
        return NotAReviewer(entry.run_id, call_id, message, entry)
    starter = entry.started_by
    own = starter is not None and context.is_caller(starter)
    if action is Action.APPROVE and policy.forbid_self_approval and own:
        message = f"{policy.label}: whoever started run {entry.run_id} may not approve it"
        return SelfApproval(entry.run_id, call_id, message, entry)
    return None


async def _count(
    context: Context,
    policy: ReviewPolicy,
    entry: RunEntry,
    call_id: str,
    recorded: CallApprovals | None,
    model_hash: str,
    edited_args: Any,
    now: datetime,
) -> DecisionOutcome | Proceed | None:
    """Record this approval; Proceed when it is the Nth. `model_hash` is the hash of the
    model's arguments, which are to be approved until an edit replaces them."""
    approvals, subject = context.storage.approvals, context.principal.subject
    current = recorded.args_hash if recorded else model_hash
    edited_hash = args_hash(edited_args) if edited_args is not None else current
    if edited_hash != current:
        # New arguments: what was approved before was of others, and is void.
        edit = Approval(subject, now, edited_hash)
        if not await approvals.replace_args(entry.run_id, call_id, recorded, edited_args, edit):
            return None
        counted = 1
        after: CallApprovals | None = None
    else:
        after = await approvals.add(
            entry.run_id, call_id, Approval(subject, now, current), model_hash
        )
        counted = len(after.counted(context.people.person_of))
    await context.storage.runs.shown_changed()
    if counted < policy.approvals:
        return ApprovalRecorded(entry, call_id, policy.approvals - counted)
    return Proceed(after.args if after is not None and after.edited else None)
