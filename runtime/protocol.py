"""One interface for what continues a run: the Python runtime and the Mastra runtime
implement it, and a run's `runtime` field chooses which one acts on it.

A resolver asks the run's runtime what it can do (`capabilities`), whether it serves the
run's agent, to check resume data, to record a decision, and to continue a claimed run;
it never branches on which runtime it holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from suspended_runs.storage import Action, RunEntry, Runtime, ToolCall


@dataclass(frozen=True, slots=True)
class Capabilities:
    starts_runs: bool
    """`startRun` can start this runtime's agents."""
    continues_each_decision: bool
    """Each decision is sent on at once (Mastra asks parallel approvals one at a time);
    otherwise a run is continued when its last pending call is decided."""
    edits_args: bool
    """An approval may carry edited arguments (Mastra's approval takes none)."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """A decided run that this process claimed and must now carry on."""

    claimed: RunEntry
    """The run with its decisions, RUNNING under this process's claim."""
    seen: RunEntry
    """The run as it was before the decision: what to put back if nothing was applied."""
    tool_call_id: str
    """The call whose decision completed the claim."""


class ApprovalsOrData:
    """Which decisions a call takes, and when a run is continued, as Mastra and this
    server's Python agents have it: a call that waits for approval is approved (edited
    where the runtime edits arguments) or declined, one that waits for data is resumed."""

    capabilities: Capabilities

    def suspension_mismatch(self, call: ToolCall, action: Action) -> str | None:
        """Why `call` cannot take `action` (WrongSuspensionKind), or None."""
        if action is Action.RESUME and call.requires_approval:
            return f"tool call {call.tool_call_id} waits for approval: approve or decline it"
        if action is not Action.RESUME and not call.requires_approval:
            return f"tool call {call.tool_call_id} waits for resume data (suspend()): resume it"
        return None

    def edits(self, call: ToolCall) -> bool:
        """Whether an approval of `call` may carry edited arguments."""
        return self.capabilities.edits_args

    def continues_now(self, decided: RunEntry, tool_call_id: str) -> bool:
        """Whether the decision just made on `tool_call_id` claims the run and continues it
        (else it is recorded, and the run waits for its other calls)."""
        return self.capabilities.continues_each_decision or not decided.pending_calls()


class AgentRuntime(Protocol):
    kind: Runtime
    capabilities: Capabilities

    def serves(self, agent_id: str) -> bool:
        """Whether this process can continue (or start) runs of `agent_id`."""

    def agent_ids(self) -> Iterable[str]:
        """The agents this runtime knows by configuration (not from the run index)."""

    async def start(
        self,
        agent_id: str,
        prompt: str,
        thread_id: str | None,
        resource_id: str | None,
        started_by: str | None = None,
    ) -> RunEntry:
        """Run an agent until it completes or suspends (only with `starts_runs`)."""

    def suspension_mismatch(self, call: ToolCall, action: Action) -> str | None:
        """Why `call` cannot take `action` (WrongSuspensionKind), or None."""

    def edits(self, call: ToolCall) -> bool:
        """Whether an approval of `call` may carry edited arguments."""

    def continues_now(self, decided: RunEntry, tool_call_id: str) -> bool:
        """Whether the decision just made on `tool_call_id` claims the run and continues it."""

    def check_resume_data(self, entry: RunEntry, call: ToolCall, data: Any) -> None:
        """Raise ResumeDataRejected for data the suspended call cannot take."""

    def check_edited_args(self, entry: RunEntry, call: ToolCall, args: Any) -> None:
        """Raise ArgsRejected for arguments the tool does not accept (`edits_args` only)."""

    async def record_decision(self, decided: RunEntry) -> None:
        """Keep a just-recorded decision where this runtime's snapshot needs it."""

    async def continue_run(self, continuation: Continuation) -> RunEntry:
        """Carry a claimed run to its next resting state, settle it, and return it.

        Raises NotApplied after putting the run back as it was seen, when the decision
        certainly never reached the runtime; OutcomeUncertain, keeping the claim, when it
        may have reached it and its answer was lost.
        """

    async def settle(self, claimed: RunEntry) -> RunEntry | None:
        """Where a claimed run came to rest, read from its snapshot; None if it has not
        moved since it was claimed."""

    async def release(self, entry: RunEntry) -> RunEntry:
        """The run as its snapshot holds it now, with no decisions: SUSPENDED, to be
        decided again (an operator accepts that a tool may run twice); or where it went."""

    async def cancel(self, claimed: RunEntry, reason: str) -> RunEntry:
        """End a claimed run so that its pending tools never run; the CANCELLED entry.

        Raises NotApplied when nothing reached the runtime, OutcomeUncertain when what was
        sent may or may not have been applied.
        """
