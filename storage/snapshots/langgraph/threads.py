"""A LangGraph thread's documents -> its run's index entry: LangGraph's own rule for what
waits, read without importing what the documents name.

LangGraph stores no status (docs/design.md, "LangGraph threads"). A thread waits when its
latest root checkpoint (`checkpoint_ns == ""`) has `__interrupt__` writes from tasks that
wrote no output (any channel but the control ones): the rule of LangGraph's
`pregel/_task_status.py`. Such a task with an `__error__` write failed, its interrupt
still listed. A run is one invocation of a thread, named by the checkpoint its input made
(`lg:<thread_id>:<input checkpoint_id>`); the caller finds that checkpoint. Pure: no I/O,
no clock.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from suspended_runs.storage.errors import MalformedSnapshot
from suspended_runs.storage.index.entry import Outcome, RunEntry
from suspended_runs.storage.snapshots.fields import read_scope
from suspended_runs.storage.snapshots.langgraph.decoding import (
    Tagged,
    Undecodable,
    decode_pair,
    decode_typed,
    fields_of,
    plain,
)
from suspended_runs.storage.snapshots.langgraph.shapes import (
    Interrupt,
    ModelCall,
    PendingCall,
    pending_calls,
)
from suspended_runs.storage.types import (
    LANGGRAPH_RUN_WORKFLOW,
    Document,
    RunStatus,
    Runtime,
    json_kind,
)

INTERRUPT, RESUME, ERROR = "__interrupt__", "__resume__", "__error__"
CONTROL_CHANNELS = (INTERRUPT, RESUME, ERROR, "__error_source_node__")
"""Writes that say what happened to a task rather than what it produced."""
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
"""Writes of the step's input (a `Command`), not of a task."""
_UUID_EPOCH = datetime(1582, 10, 15, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ThreadReading:
    """Settings of how a thread's metadata is read (LANGGRAPH_DEFAULT_AGENT,
    LANGGRAPH_RESOURCE_KEY, REVIEW_STARTER_CONTEXT_KEY)."""

    default_agent: str = "langgraph"
    resource_key: str = "user_id"
    starter_key: str | None = None


@dataclass(slots=True)
class _Task:
    path: str = ""
    output: bool = False
    interrupts: list[Interrupt] = field(default_factory=list)
    error: str | None = None
    answers: int = 0


@dataclass(frozen=True, slots=True)
class Waiting:
    """What the latest root checkpoint of a thread waits for, from its writes."""

    interrupts: tuple[Interrupt, ...]
    """Pending: raised by tasks that wrote no output."""
    error: str | None
    """The error of a task that was interrupted and failed (the run FAILED)."""
    progress: int
    """Interrupts raised, answers consumed and tasks finished in this checkpoint so far: the
    run's `suspendedAt` is its checkpoint's time plus as many milliseconds, so each step
    within one checkpoint (a sibling asking, a node asking again, an answer) rests later."""
    problems: tuple[str, ...] = ()

    @property
    def needs_messages(self) -> bool:
        """Whether a batched approval's calls need the model's tool calls for their ids."""
        return any(
            isinstance(i.value, dict) and "action_requests" in i.value for i in self.interrupts
        )


def waiting(writes: list[Document]) -> Waiting:
    """What `writes` (one checkpoint's, control values decoded by the caller's projection:
    only `__interrupt__`, `__resume__` and `__error__` carry theirs) say is pending."""
    tasks: dict[str, _Task] = {}
    problems: list[str] = []
    for write in writes:
        task_id, channel = write.get("task_id"), write.get("channel")
        if not isinstance(task_id, str) or not isinstance(channel, str) or task_id == NULL_TASK_ID:
            continue
        path = write.get("task_path")
        task = tasks.setdefault(task_id, _Task(path if isinstance(path, str) else ""))
        if channel == INTERRUPT:
            task.interrupts = _interrupts(write, task_id, problems)
        elif channel == ERROR:
            task.error = _error_text(write)
        elif channel == RESUME:
            task.answers = _answers(write)
        elif channel not in CONTROL_CHANNELS:
            task.output = True
    # In the order the tasks were made: a pushed task's path holds its position (the
    # model's call order, for per-call approvals).
    unfinished = sorted((t for t in tasks.values() if not t.output), key=lambda t: t.path)
    return Waiting(
        interrupts=tuple(i for t in unfinished for i in t.interrupts),
        error=next((t.error for t in unfinished if t.interrupts and t.error), None),
        progress=sum(t.answers + len(t.interrupts) + t.output for t in tasks.values()),
        problems=tuple(problems),
    )


def _interrupts(write: Document, task_id: str, problems: list[str]) -> list[Interrupt]:
    node = _node(write.get("task_path"))
    try:
        value = decode_typed(write.get("type"), write.get("value"))
    except Undecodable as exc:
        problems.append(f"interrupt of task {task_id}: {exc}; listed without its value")
        return [Interrupt(task_id, None, node=node)]
    items = value if isinstance(value, list) else [value]
    found = []
    for i, item in enumerate(items):
        data = fields_of(item, "Interrupt")
        raw_id = data.get("id") if data is not None else None
        if data is None or not isinstance(raw_id, str) or not raw_id:
            problems.append(f"interrupt {i} of task {task_id}: {_what(item)}, read as asked")
            found.append(Interrupt(f"{task_id}:{i}", plain(item), node=node))
            continue
        found.append(Interrupt(raw_id, data.get("value"), plain(data.get("response_schema")), node))
    return found


def _what(item: Any) -> str:
    return f"a {item.name}" if isinstance(item, Tagged) else f"{json_kind(item)} without an id"


def _node(task_path: Any) -> str | None:
    """The node of a task's path (`~__pregel_pull, <node>`); None for a pushed task."""
    if isinstance(task_path, str) and task_path.startswith("~__pregel_pull, "):
        return task_path.removeprefix("~__pregel_pull, ") or None
    return None


def _error_text(write: Document) -> str:
    """What a failed run shows of its task's error: the exception's type, never its text (a
    tool's or a model provider's message may carry content or a credential; the thread's
    `__error__` write holds it for whoever may read the saver's database)."""
    try:
        value = decode_typed(write.get("type"), write.get("value"))
    except Undecodable as exc:
        return f"an error this server cannot read ({exc})"
    if isinstance(value, Tagged):
        return f"{value.name} in a node of the graph (its thread's __error__ write says more)"
    named = re.match(r"[A-Za-z_][\w.]*(?=\()", value) if isinstance(value, str) else None
    kind = named.group(0) if named else "an error"
    return f"{kind} in a node of the graph (its thread's __error__ write says more)"


def _answers(write: Document) -> int:
    try:
        value = decode_typed(write.get("type"), write.get("value"))
    except Undecodable:
        return 1
    return len(value) if isinstance(value, list) else 1


def checkpoint_time(checkpoint_id: Any) -> datetime | None:
    """When a checkpoint was made, from its id: LangGraph's ids are version-6 UUIDs, which
    carry the time (in the same clock as the checkpoint's `ts`); None for another id."""
    try:
        parsed = uuid.UUID(checkpoint_id)
    except (TypeError, ValueError, AttributeError):
        return None
    if parsed.version != 6:
        return None
    high = parsed.int >> 64
    ticks = ((high >> 16) << 12) | (high & 0x0FFF)  # 100 ns since the Gregorian epoch
    # At BSON's precision, so that what is written compares equal to what is read back.
    return _UUID_EPOCH + timedelta(milliseconds=ticks // 10_000)


def checkpoint_id_at(moment: datetime) -> str:
    """The lowest LangGraph checkpoint id of `moment`: every checkpoint made after it has a
    greater one (a bound for "made since")."""
    ticks = int((moment - _UUID_EPOCH).total_seconds() * 10_000_000)
    value = ((ticks >> 12) << 80) | (6 << 76) | ((ticks & 0xFFF) << 64) | (0b10 << 62)
    return str(uuid.UUID(int=value))


@dataclass(frozen=True, slots=True)
class ThreadRun:
    """A thread's run as its documents show it: the entry to list and the calls it waits
    on (with the interrupts a decision answers)."""

    entry: RunEntry
    calls: tuple[PendingCall, ...]


def thread_run(
    checkpoint: Document,
    state: Waiting,
    input_checkpoint_id: str | None,
    model_calls: list[ModelCall],
    reading: ThreadReading,
) -> ThreadRun:
    """The run `checkpoint` (a thread's latest root checkpoint) waits in, `state` its
    writes' pending interrupts (some), named by `input_checkpoint_id` (None: past the walk's
    limit: the checkpoint's own, with a problem). MalformedSnapshot without a thread or id."""
    thread_id, checkpoint_id = checkpoint.get("thread_id"), checkpoint.get("checkpoint_id")
    at = checkpoint_time(checkpoint_id)
    if not isinstance(thread_id, str) or not isinstance(checkpoint_id, str) or at is None:
        raise MalformedSnapshot("a checkpoint without a thread_id or a LangGraph checkpoint_id")
    problems = list(state.problems)
    if input_checkpoint_id is None:
        problems.append("the invocation's input checkpoint is past the walk's limit")
    metadata = _metadata(checkpoint.get("metadata"), problems)
    calls = tuple(c for i in state.interrupts for c in pending_calls(i, model_calls, problems))
    scope = read_scope({"resourceId": metadata.get(reading.resource_key)}, problems, "metadata.")
    starter = metadata.get(reading.starter_key or "")
    suspended = at + timedelta(milliseconds=state.progress)
    entry = RunEntry(
        run_id=f"lg:{thread_id}:{input_checkpoint_id or checkpoint_id}",
        workflow_name=LANGGRAPH_RUN_WORKFLOW,
        runtime=Runtime.LANGGRAPH,
        agent_id=_agent_id(metadata, reading.default_agent),
        status=RunStatus.SUSPENDED,
        created_at=checkpoint_time(input_checkpoint_id) or at,
        suspended_at=suspended,
        thread_id=thread_id,
        resource_id=scope.resource_id,
        tool_calls=tuple(c.call for c in calls),
        snapshot_id=checkpoint.get("_id"),
        started_by=starter if isinstance(starter, str) else None,
        problems=tuple(problems),
    )
    if state.error is not None:
        entry = entry.finished(RunStatus.FAILED, Outcome(error=state.error), suspended)
    return ThreadRun(entry, calls)


def is_input(checkpoint: Document) -> bool:
    """Whether a checkpoint was made by an invocation's input (`metadata.source`)."""
    metadata = checkpoint.get("metadata")
    source = metadata.get("source") if isinstance(metadata, dict) else None
    try:
        return bool(decode_pair(source) == "input")
    except Undecodable:
        return False


def thread_agent(checkpoint: Document, reading: ThreadReading) -> str:
    """The agent a checkpoint's metadata names (as a run's `agentId` is read)."""
    return _agent_id(_metadata(checkpoint.get("metadata"), []), reading.default_agent)


def _metadata(raw: Any, problems: list[str]) -> dict[str, Any]:
    """The checkpoint's metadata, each `[type, bytes]` value decoded (nested objects, such
    as `parents`, are left out: nothing here reads them)."""
    decoded: dict[str, Any] = {}
    for key, pair in (raw if isinstance(raw, dict) else {}).items():
        if isinstance(pair, dict):
            continue
        try:
            decoded[key] = decode_pair(pair)
        except Undecodable as exc:
            problems.append(f"metadata.{key}: {exc}")
    return decoded


def _agent_id(metadata: dict[str, Any], default: str) -> str:
    for key in ("lc_agent_name", "agent_id"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return default
