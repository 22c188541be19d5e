"""Result unions of the mutations: the run's next resting state, or why nothing was done.

Each mutation answers a union of its own (`ToolCallDecisionResult`, `ResumeRunResult`,
`StartRunResult`, `ReleaseRunResult`, `CancelRunResult`, `ReconcileResult`); the members of
each are listed where they are read, in schema/schema.graphql, exported from this code.
Every "nothing was done" member implements `Problem { message }`.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args

import strawberry

from suspended_runs import resolvers, storage
from suspended_runs.schema.agent_run import AgentRun, ToolCallDecision


def _run() -> Any:
    return strawberry.field(
        description="The run as read when refused: a normalized cache updates its entry "
        "from it after a lost race."
    )


@strawberry.interface(description="An expected reason why a mutation did nothing.")
class Problem:
    message: str


@strawberry.type(description="The decision is recorded; `run` is the run's next resting state.")
class RunDecided:
    run: AgentRun
    tool_call_id: str = strawberry.field(description="The call that was decided.")


@strawberry.type(
    description="An approval before a review policy's Nth: recorded, not applied; the run "
    "still waits."
)
class ApprovalRecorded:
    run: AgentRun
    tool_call_id: str
    approvals_needed: int = strawberry.field(
        description="How many more distinct approvals continue the run."
    )


@strawberry.type(
    description="expectedArgsHash is not the call's argsHash now: nothing was applied."
)
class StaleDecision(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    args_hash: str = strawberry.field(description="The call's argsHash now.")
    run: AgentRun = _run()


@strawberry.type(description="A review policy forbids approving a run one started.")
class SelfApproval(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    run: AgentRun = _run()


@strawberry.type(description="A review policy names other reviewers of this call.")
class NotAReviewer(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    run: AgentRun = _run()


@strawberry.type(description="The run started; `run` is where it came to rest.")
class RunStarted:
    run: AgentRun


@strawberry.type
class RunNotFound(Problem):
    run_id: strawberry.ID


@strawberry.type
class RunNotSuspended(Problem):
    run_id: strawberry.ID
    status: storage.RunStatus
    run: AgentRun = _run()


@strawberry.type
class ToolCallNotFound(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    run: AgentRun = _run()


@strawberry.type(description="approve/decline on a suspend() call, or resume on an approval.")
class WrongSuspensionKind(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    requires_approval: bool
    run: AgentRun = _run()


@strawberry.type
class AlreadyDecided(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    decision: ToolCallDecision
    run: AgentRun = _run()


@strawberry.type(description="The resume data does not fit what the suspended tool returns.")
class InvalidResumeData(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    run: AgentRun = _run()


@strawberry.type(description="The edited arguments do not fit the tool's parameters.")
class InvalidArgs(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    run: AgentRun = _run()


@strawberry.type(
    description="This call takes no edited arguments (a Mastra run's, or a LangGraph "
    "interrupt that allows no edit): approve as is."
)
class ArgsNotEditable(Problem):
    run_id: strawberry.ID
    tool_call_id: str
    run: AgentRun = _run()


@strawberry.type(description="No runtime here can continue this run, or start this agent.")
class ExecutorUnavailable(Problem):
    run_id: strawberry.ID | None
    agent_id: strawberry.ID


@strawberry.type(description="The caller's role does not allow this.")
class Forbidden(Problem):
    needed_role: str


@strawberry.type(
    description="The decision may or may not have been applied (its answer was lost): the run "
    "stays claimed, and no other decision is forwarded, until its snapshot shows where it "
    "went; a run whose snapshot never moves becomes STALLED."
)
class OutcomeUnknown:
    message: str
    run: AgentRun = strawberry.field(
        description="The run as last read, which may not be current: when the database "
        "failed, as it was before the decision was recorded. Look at it again before "
        "deciding anew."
    )


@strawberry.type(description="A request under the same idempotencyKey is still being answered.")
class DecisionInProgress(Problem):
    run_id: strawberry.ID
    run: AgentRun = _run()


@strawberry.type(
    description="The run is SUSPENDED again, its pending calls read from its snapshot."
)
class RunReleased:
    run: AgentRun


@strawberry.type(description="The run is CANCELLED: its pending tools never run.")
class RunCancelled:
    run: AgentRun


@strawberry.type(description="The run is in a state this action does not apply to.")
class WrongRunStatus(Problem):
    run_id: strawberry.ID
    status: storage.RunStatus
    run: AgentRun = _run()


@strawberry.type(
    description="Another person reviews the run (startReview): nothing was done. Wait for "
    "the review to end, or decide with `force: true` (not under a review policy's "
    "strictReviews)."
)
class InReviewByOther(Problem):
    run_id: strawberry.ID
    in_review_by: str = strawberry.field(description="The person reviewing it.")
    in_review_until: datetime = strawberry.field(description="When the review ends.")
    run: AgentRun = _run()


@strawberry.type(description="The run index was rebuilt from the snapshots.")
class RunsReconciled:
    scanned: int
    written: int
    ended: int
    skipped: int


_MEMBERS: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        RunDecided,
        RunStarted,
        RunNotFound,
        RunNotSuspended,
        ToolCallNotFound,
        WrongSuspensionKind,
        AlreadyDecided,
        InvalidResumeData,
        InvalidArgs,
        ArgsNotEditable,
        ExecutorUnavailable,
        Forbidden,
        OutcomeUnknown,
        DecisionInProgress,
        ApprovalRecorded,
        StaleDecision,
        SelfApproval,
        NotAReviewer,
        InReviewByOther,
        RunReleased,
        RunCancelled,
        WrongRunStatus,
    )
}
"""Each GraphQL member, under the name of the resolver outcome it shows."""


def result_union(name: str, outcomes: Any, more: tuple[type[Any], ...] = ()) -> Any:
    """The GraphQL union of the members that show a resolver union's outcomes; `more`:
    members defined in another module."""
    known = {**_MEMBERS, **{cls.__name__: cls for cls in more}}
    members = tuple(known[cls.__name__] for cls in get_args(outcomes))
    return Annotated[Union[members], strawberry.union(name)]  # noqa: UP007


if TYPE_CHECKING:  # the unions are built from the resolvers' lists; a type checker sees Any
    ToolCallDecisionResult = Any
    ResumeRunResult = Any
    StartRunResult = Any
    ReleaseRunResult = Any
    CancelRunResult = Any
else:
    ToolCallDecisionResult = result_union("ToolCallDecisionResult", resolvers.DecisionOutcome)
    ResumeRunResult = result_union("ResumeRunResult", resolvers.DecisionOutcome)
    StartRunResult = result_union("StartRunResult", resolvers.StartOutcome)
    ReleaseRunResult = result_union("ReleaseRunResult", resolvers.ReleaseOutcome)
    CancelRunResult = result_union("CancelRunResult", resolvers.CancelOutcome)
ReconcileResult = Annotated[RunsReconciled | Forbidden, strawberry.union("ReconcileResult")]


def from_outcome(outcome: Any) -> Any:
    """The GraphQL member for a resolver outcome."""
    match outcome:
        case resolvers.RunDecided(run=run, tool_call_id=call_id):
            return RunDecided(run=AgentRun.from_entry(run), tool_call_id=call_id)
        case resolvers.ApprovalRecorded(run=run):
            return ApprovalRecorded(
                run=AgentRun.from_entry(run),
                tool_call_id=outcome.tool_call_id,
                approvals_needed=outcome.approvals_needed,
            )
        case resolvers.RunStarted(run=run):
            return RunStarted(run=AgentRun.from_entry(run))
        case resolvers.RunReleased(run=run):
            return RunReleased(run=AgentRun.from_entry(run))
        case resolvers.RunCancelled(run=run):
            return RunCancelled(run=AgentRun.from_entry(run))
        case resolvers.OutcomeUnknown(run=run):
            return OutcomeUnknown(message=outcome.message, run=AgentRun.from_entry(run))
        case resolvers.AlreadyDecided(decision=decision, run=run):
            return AlreadyDecided(
                message=outcome.message,
                run_id=strawberry.ID(outcome.run_id),
                tool_call_id=outcome.tool_call_id,
                decision=ToolCallDecision.from_decision(decision),
                run=AgentRun.from_entry(run),
            )
        case storage.ReconcileReport():
            return RunsReconciled(**dataclasses.asdict(outcome))
    member = _MEMBERS[type(outcome).__name__]
    values = {name: getattr(outcome, name) for name in outcome.__dataclass_fields__}
    if isinstance(entry := values.get("run"), storage.RunEntry):
        values["run"] = AgentRun.from_entry(entry)
    return member(**values)
