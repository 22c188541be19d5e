"""Each interrupt shape becomes the calls a reviewer decides; a value of a known shape that
cannot be read is still listed, as asked, with a problem."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from suspended_runs.storage.snapshots.langgraph.shapes import Interrupt, Shape, pending_calls

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def batch(*requests: dict[str, Any], configs: Any = None) -> Interrupt:
    return Interrupt("i-1", {"action_requests": list(requests), "review_configs": configs or []})


def test_a_batch_joins_the_models_calls_in_order_on_name_and_arguments() -> None:
    model = [("c1", "refund", {"n": 1}), ("c2", "refund", {"n": 1}), ("c3", "email", {})]
    interrupt = batch(
        {"name": "refund", "args": {"n": 1}},
        {"name": "email", "args": {}},
        {"name": "refund", "args": {"n": 1}},
        {"name": "refund", "args": {"n": 2}},  # no such call of the model's
        configs=[{"action_name": "email", "allowed_decisions": ["approve", "reject", "bogus"]}],
    )
    problems: list[str] = []
    calls = pending_calls(interrupt, model, problems)
    assert [c.call.tool_call_id for c in calls] == ["c1", "c3", "c2", "i-1:3"]
    assert [c.position for c in calls] == [0, 1, 2, 3]
    assert calls[1].allowed == ("approve", "reject")
    assert calls[0].allowed == ("approve", "edit", "reject", "respond")  # no config: all
    assert {c.shape for c in calls} == {Shape.HITL} and problems == []


def test_a_per_call_approval_reads_its_decisions_from_its_response_schema() -> None:
    schema = {"discriminator": {"mapping": {"reject": "#/r", "approve": "#/a"}}}
    value = {"type": "tool_approval", "tool_call_id": "c9", "name": "refund", "args": {"n": 1}}
    [call] = pending_calls(Interrupt("i-2", value, schema), [], [])
    assert (call.call.tool_call_id, call.shape, call.allowed) == (
        "c9",
        Shape.HITL_PER_CALL,
        ("approve", "reject"),
    )
    single = {"properties": {"type": {"const": "respond"}}}
    [only] = pending_calls(Interrupt("i-3", value, single), [], [])
    assert only.allowed == ("respond",)


def test_an_inbox_request_asks_approval_only_where_it_may_be_accepted() -> None:
    ask = {"action_request": {"action": "reply", "args": {}}, "config": {"allow_respond": True}}
    [call] = pending_calls(Interrupt("i-4", ask), [], [])
    assert (call.call.tool_name, call.call.requires_approval, call.allowed) == (
        "reply",
        False,
        ("allow_respond",),
    )
    two = pending_calls(Interrupt("i-5", [ask, ask]), [], [])
    assert [c.call.tool_call_id for c in two] == ["i-5:0", "i-5:1"]


def test_a_known_shape_that_cannot_be_read_is_listed_as_asked_with_a_problem() -> None:
    value: Any
    for value in (
        {"action_requests": "not a list"},
        {"action_requests": [{"args": {}}]},
        {"type": "tool_approval", "name": 7},
        [{"action_request": "x"}],
    ):
        problems: list[str] = []
        [call] = pending_calls(Interrupt("i-6", value, node="ask"), [], problems)
        assert (call.shape, call.call.tool_call_id, call.call.tool_name) == (
            Shape.INTERRUPT,
            "i-6",
            "ask",
        )
        assert problems, value


@given(JSON)
def test_any_json_value_is_one_listed_suspension_or_its_calls(value: Any) -> None:
    problems: list[str] = []
    calls = pending_calls(Interrupt("i-7", value), [], problems)
    assert calls
    for call in calls:
        assert call.call.tool_call_id is not None
