"""What a webhook is sent (runtime/webhooks/payloads.py): the run as AgentRun shows it,
large arguments replaced by their size, and Slack's Block Kit message."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from suspended_runs.runtime.webhooks.payloads import PayloadRules, slack_body, standard_body

AT = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
ARGS = {"path": "/tmp/a.txt", "blob": "x" * 40_000}
RUN: dict[str, object] = {
    "runId": "run-1",
    "agentId": "file-cleaner",
    "status": "SUSPENDED",
    "createdAt": AT,
    "suspendedAt": AT,
    "toolCalls": [
        {
            "toolCallId": "call-1",
            "toolName": "delete_file",
            "args": ARGS,
            "requiresApproval": True,
            "decision": None,
        }
    ],
}


def test_the_standard_body_has_the_run_an_inbox_link_and_bounded_args() -> None:
    rules = PayloadRules(public_url="https://inbox.example/", max_args_bytes=16_384)
    body = json.loads(standard_body("run.suspended", AT, RUN, None, rules))
    assert body["type"] == "run.suspended"
    assert body["timestamp"] == "2026-12-04T09:00:00Z"
    assert body["data"]["inboxUrl"] == "https://inbox.example/runs/run-1"
    call = body["data"]["run"]["toolCalls"][0]
    size = len(json.dumps(ARGS, separators=(",", ":")))
    assert call["args"] == {"truncated": True, "bytes": size}
    assert body["data"]["run"]["suspendedAt"] == "2026-12-04T09:00:00Z"


def test_slack_gets_blocks_with_the_agent_the_tool_the_wait_and_a_button() -> None:
    rules = PayloadRules(public_url="https://inbox.example", max_args_bytes=100)
    later = AT + timedelta(minutes=5)
    body = json.loads(slack_body("run.suspended", AT, RUN, None, later, rules))
    text = body["blocks"][0]["text"]["text"]
    assert "file-cleaner" in text and "delete_file" in text and "5 min" in text
    button = body["blocks"][1]["elements"][0]
    assert button["url"] == "https://inbox.example/runs/run-1"
    assert body["text"].startswith("*Waiting for a person*")


def test_slack_without_a_public_url_has_no_button() -> None:
    rules = PayloadRules(public_url=None, max_args_bytes=16_384)
    body = json.loads(slack_body("run.suspended", AT, RUN, None, AT, rules))
    assert [block["type"] for block in body["blocks"]] == ["section"]


def test_slack_shows_an_agents_text_literally_and_within_slacks_bounds() -> None:
    """What an agent wrote makes no link or mention in Slack, and no section is longer
    than Slack takes (3,000 characters)."""
    rules = PayloadRules(public_url=None, max_args_bytes=16_384)
    sly = {"path": "<https://evil.example|Approve here> <!channel> & more"}
    call = {"toolName": "delete_file", "requiresApproval": True, "decision": None, "args": sly}
    calls = [{**call, "toolCallId": f"c-{i}"} for i in range(5)]
    run = {**RUN, "agentId": "a" * 2000, "toolCalls": calls}
    text = json.loads(slack_body("run.suspended", AT, run, None, AT, rules))["blocks"][0]
    shown = text["text"]["text"]
    assert "<https://evil" not in shown and "<!channel>" not in shown
    assert "&lt;https://evil.example|Approve here&gt; &lt;!channel&gt; &amp; more" in shown
    assert len(shown) <= 3000
