"""Reviewing together in GraphQL: `startReview`, `endReview`, `assignRun`, `addRunNote`,
`deleteRunNote`, their inputs and result unions (docs/reviews.md, "Reviewing together").

A mixin of the `Mutation` root (schema/mutation.py), so that these fields live beside
each other and not among the decisions'. Every "nothing was done" member implements
`Problem { message }`, the fallback a client that switches on `__typename` reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import strawberry
from strawberry.types import Info

from suspended_runs import resolvers
from suspended_runs.resolvers.run_reviews import DEFAULT_MINUTES
from suspended_runs.schema.agent_run import AgentRun
from suspended_runs.schema.charged import Charged
from suspended_runs.schema.results import Problem, from_outcome, result_union
from suspended_runs.schema.run_notes import RunNote

ContextInfo = Info[resolvers.Context, Any]


@strawberry.input
class StartReviewInput:
    run_id: strawberry.ID
    minutes: int = strawberry.field(
        default=DEFAULT_MINUTES,
        description="How long from now (at most REVIEW_MAX_MINUTES); again: from now again.",
    )


@strawberry.input
class EndReviewInput:
    run_id: strawberry.ID


@strawberry.input
class AssignRunInput:
    run_id: strawberry.ID
    to: list[str] = strawberry.field(
        description="person:<name>, key:<name>, jwt:<sub> or group:<name>, added to whom "
        "the run was handed before."
    )


@strawberry.input
class AddRunNoteInput:
    run_id: strawberry.ID
    body: str = strawberry.field(
        description="Plain text, at most MAX_TEXT_BYTES, without control characters but "
        "tab and line breaks."
    )


@strawberry.input
class DeleteRunNoteInput:
    note_id: strawberry.ID


@strawberry.type(description="The caller reviews the run until `run.inReviewUntil`.")
class ReviewStarted:
    run: AgentRun


@strawberry.type(description="Nobody reviews the run now.")
class ReviewEnded:
    run: AgentRun


@strawberry.type(description="The run is handed over: its calls' `assignedTo` name them.")
class RunAssigned:
    run: AgentRun


@strawberry.type(description="The note is written; `run` shows it among its notes.")
class NoteAdded:
    note: RunNote
    run: AgentRun


@strawberry.type(description="The note is deleted.")
class NoteDeleted:
    note_id: strawberry.ID
    run_id: strawberry.ID


@strawberry.type(description="No such note (or one on a run the caller cannot see).")
class NoteNotFound(Problem):
    note_id: strawberry.ID


_MINE = (ReviewStarted, ReviewEnded, RunAssigned, NoteAdded, NoteDeleted, NoteNotFound)

if TYPE_CHECKING:  # built from the resolvers' lists; a type checker sees Any
    StartReviewResult = Any
    EndReviewResult = Any
    AssignRunResult = Any
    AddRunNoteResult = Any
    DeleteRunNoteResult = Any
else:
    StartReviewResult = result_union("StartReviewResult", resolvers.ReviewOutcome, _MINE)
    EndReviewResult = result_union("EndReviewResult", resolvers.EndReviewOutcome, _MINE)
    AssignRunResult = result_union("AssignRunResult", resolvers.AssignOutcome, _MINE)
    AddRunNoteResult = result_union("AddRunNoteResult", resolvers.NoteOutcome, _MINE)
    DeleteRunNoteResult = result_union("DeleteRunNoteResult", resolvers.DeleteNoteOutcome, _MINE)


def shown(outcome: Any) -> Any:
    """The GraphQL member for a resolver outcome of these mutations."""
    match outcome:
        case resolvers.ReviewStarted(run=run):
            return ReviewStarted(run=AgentRun.from_entry(run))
        case resolvers.ReviewEnded(run=run):
            return ReviewEnded(run=AgentRun.from_entry(run))
        case resolvers.RunAssigned(run=run):
            return RunAssigned(run=AgentRun.from_entry(run))
        case resolvers.NoteAdded(note=note, run=run):
            return NoteAdded(note=RunNote.from_note(note), run=AgentRun.from_entry(run))
        case resolvers.NoteDeleted(note_id=note_id, run_id=run_id):
            return NoteDeleted(note_id=strawberry.ID(note_id), run_id=strawberry.ID(run_id))
        case resolvers.NoteNotFound(note_id=note_id, message=message):
            return NoteNotFound(note_id=strawberry.ID(note_id), message=message)
    return from_outcome(outcome)


@strawberry.type
class ReviewMutation:
    @strawberry.mutation(
        description="Review a SUSPENDED run for `minutes` (approver, who may decide one of "
        "its calls): others see who reviews it until when, and their decisions wait for "
        "it unless they force them.",
        extensions=[Charged()],
    )
    async def start_review(self, info: ContextInfo, input: StartReviewInput) -> StartReviewResult:
        outcome = await resolvers.start_review(info.context, input.run_id, input.minutes)
        return shown(outcome)

    @strawberry.mutation(
        description="End the caller's review of a run (an admin: anyone's).",
        extensions=[Charged()],
    )
    async def end_review(self, info: ContextInfo, input: EndReviewInput) -> EndReviewResult:
        return shown(await resolvers.end_review(info.context, input.run_id))

    @strawberry.mutation(
        description="Hand a SUSPENDED run to people or groups beside whom its review policy "
        "names, for all its pending calls (admin, or the approver reviewing it: their "
        "review ends).",
        extensions=[Charged()],
    )
    async def assign_run(self, info: ContextInfo, input: AssignRunInput) -> AssignRunResult:
        return shown(await resolvers.assign_run(info.context, input.run_id, list(input.to)))

    @strawberry.mutation(
        description="Write a note beside a run (approver): plain text, kept RETENTION_DAYS.",
        extensions=[Charged()],
    )
    async def add_run_note(self, info: ContextInfo, input: AddRunNoteInput) -> AddRunNoteResult:
        return shown(await resolvers.add_note(info.context, input.run_id, input.body))

    @strawberry.mutation(
        description="Delete a note (its author, or an admin).", extensions=[Charged()]
    )
    async def delete_run_note(
        self, info: ContextInfo, input: DeleteRunNoteInput
    ) -> DeleteRunNoteResult:
        return shown(await resolvers.delete_note(info.context, input.note_id))
