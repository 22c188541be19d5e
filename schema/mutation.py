"""The `Mutation` root: start runs, and decide their pending tool calls."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.types import Info

from suspended_runs import resolvers
from suspended_runs.schema import webhook_owners, webhooks
from suspended_runs.schema.charged import Charged
from suspended_runs.schema.filters import SuspendedRunsFilter
from suspended_runs.schema.inputs import (
    ApproveToolCallInput,
    CancelRunInput,
    DeclineToolCallInput,
    ReleaseRunInput,
    ResumeRunInput,
    StartRunInput,
    ToolCallDecisionInput,
)
from suspended_runs.schema.results import (
    CancelRunResult,
    ReconcileResult,
    ReleaseRunResult,
    ResumeRunResult,
    StartRunResult,
    ToolCallDecisionResult,
    from_outcome,
)
from suspended_runs.schema.run_reviews import ReviewMutation
from suspended_runs.schema.webhook_owners import TakeOverWebhookResult
from suspended_runs.schema.webhooks import (
    CreateWebhookInput,
    CreateWebhookResult,
    DeleteWebhookResult,
    RedeliverWebhookEventInput,
    RedeliverWebhookEventResult,
    RotateWebhookSecretResult,
    WebhookInput,
)
from suspended_runs.storage import Action

ContextInfo = Info[resolvers.Context, Any]


@strawberry.type
class Mutation(ReviewMutation):
    @strawberry.mutation(
        description="Run a Python agent until it completes or suspends.", extensions=[Charged()]
    )
    async def start_run(self, info: ContextInfo, input: StartRunInput) -> StartRunResult:
        outcome = await resolvers.start_run(
            info.context, input.agent_id, input.prompt, input.thread_id, input.resource_id
        )
        return from_outcome(outcome)

    @strawberry.mutation(
        description="Approve a tool call that waits for approval.", extensions=[Charged()]
    )
    async def approve_tool_call(
        self,
        info: ContextInfo,
        input: ApproveToolCallInput,
    ) -> ToolCallDecisionResult:
        return await _decide(info, Action.APPROVE, input, edited_args=input.edited_args)

    @strawberry.mutation(
        description="Several decisions, each answered in order exactly as its own mutation "
        "would answer it, and continued concurrently (at most BULK_DECISIONS_MAX).",
        extensions=[Charged()],
    )
    async def decide_tool_calls(
        self, info: ContextInfo, decisions: list[ToolCallDecisionInput]
    ) -> list[ToolCallDecisionResult]:
        requests = [
            resolvers.DecisionRequest(
                d.action,
                d.run_id,
                d.tool_call_id,
                reason=d.reason,
                resume_data=d.resume_data,
                idempotency_key=d.idempotency_key,
                edited_args=d.edited_args,
                expected_args_hash=d.expected_args_hash,
                force=d.force,
            )
            for d in decisions
        ]
        return [from_outcome(o) for o in await resolvers.decide_many(info.context, requests)]

    @strawberry.mutation(
        description="Decline a tool call that waits for approval.", extensions=[Charged()]
    )
    async def decline_tool_call(
        self,
        info: ContextInfo,
        input: DeclineToolCallInput,
    ) -> ToolCallDecisionResult:
        return await _decide(info, Action.DECLINE, input, reason=input.reason)

    @strawberry.mutation(
        description="Give a suspended tool call (suspend()) its result.", extensions=[Charged()]
    )
    async def resume_run(self, info: ContextInfo, input: ResumeRunInput) -> ResumeRunResult:
        return await _decide(info, Action.RESUME, input, resume_data=input.resume_data)

    @strawberry.mutation(
        description="Put a STALLED run, or one whose outcome is unknown, back to SUSPENDED "
        "with its pending calls read again from its snapshot (admin; a tool may run again).",
        extensions=[Charged()],
    )
    async def release_run(self, info: ContextInfo, input: ReleaseRunInput) -> ReleaseRunResult:
        return from_outcome(await resolvers.release_run(info.context, input.run_id, input.reason))

    @strawberry.mutation(
        description="End a SUSPENDED or STALLED run so that its pending tools never run "
        "(approver): a Python run's snapshot is removed; a Mastra run's calls are declined.",
        extensions=[Charged()],
    )
    async def cancel_run(self, info: ContextInfo, input: CancelRunInput) -> CancelRunResult:
        return from_outcome(await resolvers.cancel_run(info.context, input.run_id, input.reason))

    @strawberry.mutation(
        description="Post the events named to a URL, signed with a secret shown once (admin).",
        extensions=[Charged()],
    )
    async def create_webhook(
        self, info: ContextInfo, input: CreateWebhookInput
    ) -> CreateWebhookResult:
        outcome = await resolvers.webhooks.create_webhook(
            info.context,
            input.url,
            list(input.events),
            (input.filter or SuspendedRunsFilter()).to_run_filter(),
            input.format,
            input.description,
        )
        return webhooks.shown(outcome)

    @strawberry.mutation(description="Stop posting to a webhook (admin).", extensions=[Charged()])
    async def delete_webhook(self, info: ContextInfo, input: WebhookInput) -> DeleteWebhookResult:
        return webhooks.shown(await resolvers.webhooks.delete_webhook(info.context, input.id))

    @strawberry.mutation(
        description="A new signing secret; the old one signs beside it for "
        "WEBHOOK_ROTATION_SECONDS (admin).",
        extensions=[Charged()],
    )
    async def rotate_webhook_secret(
        self, info: ContextInfo, input: WebhookInput
    ) -> RotateWebhookSecretResult:
        outcome = await resolvers.webhooks.rotate_webhook_secret(info.context, input.id)
        return webhooks.shown(outcome)

    @strawberry.mutation(
        description="Become a webhook's owner: an admin who manages it and holds its scope; "
        "one disabled because its owner was gone posts again.",
        extensions=[Charged()],
    )
    async def take_over_webhook(
        self, info: ContextInfo, input: WebhookInput
    ) -> TakeOverWebhookResult:
        outcome = await resolvers.webhook_owners.take_over_webhook(info.context, input.id)
        return webhook_owners.taken_over(outcome)

    @strawberry.mutation(
        description="Post a delivery again, from the retry schedule's start (admin).",
        extensions=[Charged()],
    )
    async def redeliver_webhook_event(
        self, info: ContextInfo, input: RedeliverWebhookEventInput
    ) -> RedeliverWebhookEventResult:
        return webhooks.shown(await resolvers.webhooks.redeliver(info.context, input.delivery_id))

    @strawberry.mutation(
        description="Rebuild the run index from the snapshots (admin).", extensions=[Charged()]
    )
    async def reconcile_runs(self, info: ContextInfo) -> ReconcileResult:
        return from_outcome(await resolvers.reconcile(info.context))


async def _decide(
    info: ContextInfo,
    action: Action,
    input: ApproveToolCallInput | DeclineToolCallInput | ResumeRunInput,
    **details: Any,
) -> Any:
    request = resolvers.DecisionRequest(
        action,
        input.run_id,
        input.tool_call_id,
        idempotency_key=input.idempotency_key,
        wait=input.wait,
        expected_args_hash=input.expected_args_hash,
        force=input.force,
        **details,
    )
    return from_outcome(await resolvers.decide(info.context, request))
