"""A thread waits by LangGraph's own rule (an interrupt of a task that wrote no output),
fails where that task wrote an error, and its run is named by its invocation's input; a
checkpoint that cannot be read is refused, a field that cannot be read is a problem."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from langgraph.checkpoint.base.id import uuid6

from suspended_runs.storage import MalformedSnapshot, RunStatus
from suspended_runs.storage.snapshots.langgraph.threads import (
    NULL_TASK_ID,
    ThreadReading,
    checkpoint_time,
    thread_run,
    waiting,
)
from tests.langgraph_documents import checkpoint, interrupted, write

THREAD = "t-1"


def test_an_interrupt_waits_until_its_task_writes_output() -> None:
    here = str(uuid6())
    asked = write(THREAD, here, "__interrupt__", interrupted({"q": 1}, "i-1"))
    assert [i.id for i in waiting([asked]).interrupts] == ["i-1"]
    answered = write(THREAD, here, "__resume__", ["yes"], idx=-4)
    output = write(THREAD, here, "messages", [], idx=0)
    state = waiting([asked, answered, output])
    assert state.interrupts == () and state.progress == 3  # asked, answered, done
    # A resume alone answers nothing: a node asking twice keeps its first answer.
    assert [i.id for i in waiting([asked, answered]).interrupts] == ["i-1"]
    # The step's input (a Command) is not a task.
    assert waiting([{**output, "task_id": NULL_TASK_ID}, asked]).interrupts


def test_an_interrupted_task_that_wrote_an_error_failed() -> None:
    here = str(uuid6())
    asked = write(THREAD, here, "__interrupt__", interrupted({"q": 1}))
    error = write(THREAD, here, "__error__", ValueError("bad answer"), idx=-1)
    state = waiting([asked, error])
    assert state.error is not None and state.error.startswith("ValueError")
    assert "bad answer" not in state.error  # its text stays in the thread's write
    run = thread_run(
        checkpoint(THREAD, here, None, source="input"), state, here, [], ThreadReading()
    )
    assert run.entry.status is RunStatus.FAILED
    assert run.entry.outcome is not None and run.entry.outcome.error == state.error


def test_an_interrupt_that_cannot_be_read_is_still_listed_with_a_problem() -> None:
    here = str(uuid6())
    for raw in (("pickle", b"\x80\x04."), ("msgpack+aes", b"x" * 40), ("msgpack", b"\x92\x01")):
        state = waiting([write(THREAD, here, "__interrupt__", None, raw=raw)])
        [pending] = state.interrupts
        assert pending.node == "ask" and state.problems


def test_a_run_is_named_by_its_input_checkpoint_and_read_from_its_metadata() -> None:
    first, here = str(uuid6()), str(uuid6())
    doc = checkpoint(THREAD, here, first, lc_agent_name="refunds", user_id="u-1", who="key:a")
    doc["metadata"]["agent_id"] = ["msgpack", b"\xc1"]  # unreadable: a problem, not a failure
    state = waiting([write(THREAD, here, "__interrupt__", interrupted({"q": 1}))])
    reading = ThreadReading(starter_key="who")
    entry = thread_run(doc, state, first, [], reading).entry
    assert entry.run_id == f"lg:{THREAD}:{first}"
    assert (entry.agent_id, entry.resource_id, entry.started_by) == ("refunds", "u-1", "key:a")
    made = checkpoint_time(here)
    assert made is not None and entry.created_at == checkpoint_time(first)
    assert entry.suspended_at == made + timedelta(milliseconds=1)  # one interrupt asked
    assert [p for p in entry.problems if p.startswith("metadata.agent_id")]
    far = thread_run(doc, state, None, [], reading).entry
    assert far.run_id == f"lg:{THREAD}:{here}" and "walk" in " ".join(far.problems)


def test_an_id_that_is_not_langgraphs_or_a_missing_thread_is_refused() -> None:
    state = waiting([write(THREAD, "x", "__interrupt__", interrupted({}))])
    for doc in (
        checkpoint(THREAD, "not-a-uuid", None),
        {**checkpoint(THREAD, str(uuid6()), None), "thread_id": 7},
    ):
        with pytest.raises(MalformedSnapshot):
            thread_run(doc, state, None, [], ThreadReading())


def test_a_checkpoint_id_carries_the_time_of_its_ts() -> None:
    made = checkpoint_time(str(uuid6()))
    assert (
        isinstance(made, datetime) and abs((datetime.now(made.tzinfo) - made).total_seconds()) < 5
    )
    assert checkpoint_time("12345678-1234-4234-8234-123456789abc") is None  # a v4 uuid
