"""The approval inbox (server/inbox.py, server/static/) in a real headless Chromium, driven
by Playwright, on a real server (uvicorn) with API keys: the page uses the public GraphQL
API only, and loads nothing from another origin (checked on every page of every test).

Chromium is Debian's (`/usr/bin/chromium`; scripts/test installs it). Set
`SKIP_BROWSER_TESTS=1` to skip these tests where it cannot be installed. The README's
picture is tests/test_demo.py's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, expect
from pymongo import MongoClient

from suspended_runs.server import Settings
from suspended_runs.server.inbox import CONTENT_SECURITY_POLICY
from suspended_runs.storage import RUNS_COLLECTION, SNAPSHOTS_COLLECTION
from tests.helpers import ThreadedServer, load_snapshots

KEYS = {"alice": "admin", "bob": "approver", "vera": "viewer"}
"""API key names and roles; each key is `key-<name>`, and sees every run."""
START = "mutation($input: StartRunInput!) { startRun(input: $input) { ... on RunStarted { run { runId toolCalls { toolCallId } } } } }"  # noqa: E501

MANIFEST = {"format": "apollo-persisted-query-manifest", "version": 1}
ALICE = {"X-API-Key": "key-alice"}

expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "api_keys.json"
    entries = [
        {"name": name, "sha256": _digest(f"key-{name}"), "role": role, "scope": "all"}
        for name, role in KEYS.items()
    ]
    path.write_text(json.dumps(entries))
    return path


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass
class Inbox:
    """A server on a fresh database, and the browser pages opened on it."""

    url: str
    database: Any
    browser: Browser
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    """What the pages' WebSockets received."""

    def gql(self, query: str, variables: dict[str, Any] | None = None, key: str = "alice") -> Any:
        response = httpx.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables},
            headers={"X-API-Key": f"key-{key}"},
            timeout=30,
        )
        body = response.json()
        assert "errors" not in body, body
        return body["data"]

    def start(self, agent: str, prompt: str = "go", **extra: Any) -> dict[str, Any]:
        data = self.gql(START, {"input": {"agentId": agent, "prompt": prompt, **extra}})
        run: dict[str, Any] = data["startRun"]["run"]
        return run

    def seed_mastra(self) -> None:
        self.database[SNAPSHOTS_COLLECTION].insert_many(load_snapshots())

    def open(
        self,
        key: str | None = "alice",
        *,
        auto_refresh: bool = True,
        clock: bool = False,
        live: bool = True,
        path: str = "/",
    ) -> Page:
        """A page signed in with `key`; `live` False: its WebSocket never opens (a proxy
        that does not pass them), so it polls."""
        context = self.browser.new_context(
            viewport={"width": 1280, "height": 900}, timezone_id="UTC", locale="en-GB"
        )
        page = context.new_page()
        if not live:
            page.route_web_socket(re.compile(r".*/graphql$"), lambda ws: ws.close())
        if clock:  # the page's timers run when the test moves its clock
            page.clock.install()
        page.on("request", lambda request: self._record(request))
        page.on("websocket", lambda ws: ws.on("framereceived", self._record_frame))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.pages.append(page)
        page.goto(f"{self.url}{path}")
        if key is not None:
            sign_in(page, f"key-{key}")
            expect(page.locator("#who-text")).to_contain_text(f"key:{key}")
            expect(page.locator("#updated")).to_contain_text("updated")
        if not auto_refresh:
            page.get_by_label("Refresh every few seconds").uncheck()
        return page

    def _record(self, request: Request) -> None:
        self.requests.append(request.url)

    def _record_frame(self, frame: str | bytes) -> None:
        self.frames.append(frame if isinstance(frame, str) else frame.decode())


def sign_in(page: Page, credential: str) -> None:
    page.get_by_label("Key or token").fill(credential)
    page.get_by_role("button", name="Sign in").click()


@pytest.fixture
def inbox(
    request: pytest.FixtureRequest, browser: Browser, mongo_uri: str, keys_file: Path
) -> Iterator[Inbox]:
    """`{"trusted": True}` as the parameter: a server of trusted documents, whose
    manifest holds only the test's own START (the page's operations are always allowed);
    `{"policies": [...]}`: a server with these review policies; `{"settings": {...}}`:
    with these settings."""
    name = f"inbox_{uuid.uuid4().hex[:10]}"
    client: MongoClient[Any] = MongoClient(mongo_uri, tz_aware=True)
    settings = Settings(
        mongodb_uri=mongo_uri, mongodb_db=name, sync_poll_interval=0.2, api_keys_file=keys_file
    )
    if getattr(request, "param", {}).get("trusted"):
        manifest = keys_file.parent / f"{name}-manifest.json"
        operation = {"id": hashlib.sha256(START.encode()).hexdigest(), "body": START}
        manifest.write_text(json.dumps({**MANIFEST, "operations": [operation]}))
        update = {"persisted_queries_only": True, "persisted_queries_file": manifest}
        settings = settings.model_copy(update=update)
    if policies := getattr(request, "param", {}).get("policies"):
        settings = settings.model_copy(update={"review_policies": json.dumps(policies)})
    settings = settings.model_copy(update=getattr(request, "param", {}).get("settings", {}))
    try:
        with ThreadedServer(settings) as url:
            inbox = Inbox(url, client[name], browser)
            yield inbox
            for page in inbox.pages:
                page.context.close()
    finally:
        client.drop_database(name)
        client.close()
    assert inbox.requests, "no page made a request"
    assert all(url.startswith(f"{inbox.url}/") for url in inbox.requests), inbox.requests
    assert not inbox.errors, inbox.errors


def card(page: Page, run_id: str) -> Any:
    return page.locator(f'article[data-run="{run_id}"]')


def answers(page: Page) -> Any:
    return page.locator("#answers")


@pytest.mark.parametrize("env", ["development", "production"])
def test_the_page_and_its_files_are_served_to_anyone_under_a_strict_policy(
    mongo_uri: str, keys_file: Path, env: str
) -> None:
    name = f"inbox_{uuid.uuid4().hex[:10]}"
    settings = Settings(mongodb_uri=mongo_uri, mongodb_db=name, api_keys_file=keys_file, env=env)
    with ThreadedServer(settings) as url:
        for path in ("/", "/static/app.js", "/static/inbox.css", "/static/favicon.svg"):
            response = httpx.get(f"{url}{path}")  # no credentials: the API calls need them
            assert response.status_code == 200, path
            assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert response.headers["x-content-type-options"] == "nosniff"
        assert (
            httpx.get(f"{url}/static/app.js").headers["content-type"].startswith("text/javascript")
        )
        html = httpx.get(f"{url}/", headers={"accept": "text/html"}).text
        assert '<script type="module" src="/static/app.js"></script>' in html
        assert not re.search(r"<script>|<style|style=| on[a-z]+=", html)  # nothing inline
        assert not re.search(r'(src|href)="(https?:)?//', html)
        assert httpx.get(f"{url}/static/missing.js").status_code == 404
        for name, role in KEYS.items():  # what the page asks to offer only what one may do
            viewer = httpx.get(
                f"{url}/graphql",
                params={"query": "{ viewer { subject role authenticated } }"},
                headers={"X-API-Key": f"key-{name}"},
            ).json()["data"]["viewer"]
            assert viewer == {"subject": f"key:{name}", "role": role.upper(), "authenticated": True}
        ide = httpx.get(f"{url}/graphql", headers={"accept": "text/html"})
        # GraphiQL stays the development tool; production serves the inbox only.
        assert ide.status_code == (200 if env == "development" else 401)
    with MongoClient[Any](mongo_uri) as client:
        client.drop_database(name)


def test_runs_across_agents_are_listed_filtered_and_paged(inbox: Inbox, tmp_path: Path) -> None:
    cleaner = inbox.start("file-cleaner", "please delete /tmp/report.txt", threadId="t-42")
    long_path = "/tmp/" + "x" * 300
    inbox.start("file-cleaner", f"delete {long_path}", resourceId="user-7")
    asker = inbox.start("city-asker", "Where shall we meet?", threadId="t-42")
    page = inbox.open("alice")
    summary = page.locator("#summary")
    expect(summary).to_have_text("3 runs wait for a decision.")
    inbox.seed_mastra()  # listed by the follower, then by the page's next poll
    expect(summary).to_have_text("9 runs wait for a decision.")
    mastra = card(page, "d9136ea3-d391-4495-ae37-e4fee5e374a8")
    expect(mastra.locator("h3")).to_have_text("approver Mastra")
    expect(mastra.locator(".meta dd")).to_have_text(
        ["thread-3", "user-1", "d9136ea3-d391-4495-ae37-e4fee5e374a8"]
    )
    expect(mastra.locator(".age")).to_have_text(re.compile(r"suspended \d+ (h|days?) ago"))
    expect(mastra.locator(".payload")).to_have_text('{"path":"/tmp/b.txt"}')
    # No Mastra server here: no decision is offered on it, and the card says why.
    expect(mastra.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    expect(mastra.locator(".not-continuable")).to_contain_text(
        "No decision can be made here: no Mastra server is configured for agent 'approver'"
    )
    python = card(page, cleaner["runId"])
    expect(python.locator("h3")).to_have_text("file-cleaner Python")
    expect(python.locator(".age")).to_have_text(re.compile(r"suspended (just now|\d+ s ago)"))
    expect(card(page, asker["runId"]).locator(".payload")).to_have_text(
        '{"question":"Where shall we meet?"}'
    )
    expect(page.locator("pre.json-string", has_text=long_path)).to_be_visible()  # whole
    _filters_narrow_the_list(page, summary)
    _pages_follow_the_keyset(page)
    card(page, cleaner["runId"]).get_by_role("button", name="Approve", exact=True).click()
    expect(answers(page)).to_contain_text("Approved delete_file. The run completed")
    expect(summary).to_have_text("8 runs wait for a decision.")
    _screenshot(page, tmp_path)


def _filters_narrow_the_list(page: Page, summary: Any) -> None:
    page.get_by_label("Agent").select_option("approver")
    expect(summary).to_have_text("3 runs wait for a decision.")
    expect(page.locator("article.run h3")).to_have_text(["approver Mastra"] * 3)
    page.get_by_label("Agent").select_option("")
    page.get_by_label("Thread").fill("t-42")
    page.get_by_label("Thread").press("Enter")
    expect(summary).to_have_text("2 runs wait for a decision.")
    page.get_by_role("button", name="Clear").click()
    page.get_by_label("Resource").fill("user-1")
    page.get_by_label("Created to").fill(dt.date(2026, 11, 30).isoformat())
    page.get_by_role("button", name="Apply filters").click()
    expect(summary).to_have_text("3 runs wait for a decision.")
    page.get_by_label("Created from").fill(dt.date(2026, 12, 1).isoformat())
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#problem")).to_contain_text("fromDate must not be after toDate")
    page.get_by_role("button", name="Clear").click()
    today = dt.datetime.now(dt.UTC).date().isoformat()
    page.get_by_label("Created from").fill(today)
    page.get_by_role("button", name="Apply filters").click()
    expect(summary).to_have_text("3 runs wait for a decision.")
    expect(page.locator("article.run .badge")).to_have_text(["Python"] * 3)
    page.get_by_role("button", name="Clear").click()
    expect(summary).to_have_text("9 runs wait for a decision.")


def _pages_follow_the_keyset(page: Page) -> None:
    page.get_by_label("Per page").select_option("5")
    label = page.locator("#page-label")
    expect(label).to_have_text("Page 1: runs 1 to 5 of 9")
    first_page = page.locator("article.run").evaluate_all("cards => cards.map(c => c.dataset.run)")
    expect(page.get_by_role("button", name="Newer")).to_be_disabled()
    page.get_by_role("button", name="Older").click()
    expect(label).to_have_text("Page 2: runs 6 to 9 of 9")
    expect(page.get_by_role("button", name="Older")).to_be_disabled()
    second_page = page.locator("article.run").evaluate_all("cards => cards.map(c => c.dataset.run)")
    assert len(set(first_page) | set(second_page)) == 9
    page.get_by_role("button", name="Newer").click()
    expect(label).to_have_text("Page 1: runs 1 to 5 of 9")
    page.get_by_label("Per page").select_option("20")
    expect(page.locator("article.run")).to_have_count(9)


def _screenshot(page: Page, tmp_path: Path) -> None:
    """A screenshot of the inbox can be taken, one answer given."""
    page.set_viewport_size({"width": 1280, "height": 1280})
    page.evaluate("window.scrollTo(0, 0)")
    target = tmp_path / "inbox.png"
    page.screenshot(path=str(target))
    assert target.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("inbox", [{"trusted": True}], indirect=True)
def test_the_page_works_on_a_server_that_runs_only_trusted_documents(inbox: Inbox) -> None:
    run = inbox.start("file-cleaner", "please delete /tmp/report.txt")
    page = inbox.open("alice")
    card(page, run["runId"]).get_by_role("button", name="Approve", exact=True).click()
    expect(answers(page).locator("li").first).to_contain_text("Approved delete_file.")
    page.get_by_role("link", name="Recent").click()
    expect(card(page, run["runId"]).locator(".badge.state")).to_have_text("COMPLETED")
    other = httpx.post(
        f"{inbox.url}/graphql", json={"query": "{ viewer { role } }"}, headers=ALICE, timeout=30
    )
    assert other.status_code == 400
    assert other.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"


def test_approving_completes_a_python_run_which_leaves_for_the_recent_view(inbox: Inbox) -> None:
    run = inbox.start("file-cleaner", "please delete /tmp/report.txt")
    other = inbox.start("file-cleaner", "please delete /tmp/draft.txt")
    page = inbox.open("alice")
    card(page, run["runId"]).get_by_role("button", name="Approve", exact=True).focus()
    page.keyboard.press("Enter")  # from the keyboard
    expect(answers(page).locator("li").first).to_contain_text(
        "Approved delete_file. The run completed: delete_file: deleted /tmp/report.txt"
    )
    expect(card(page, run["runId"])).to_have_count(0)
    expect(card(page, other["runId"]).locator("h3")).to_be_focused()  # the next run
    expect(page.locator("#summary")).to_have_text("1 run waits for a decision.")
    _edited_approval(inbox, page, other["runId"])
    page.get_by_role("link", name="Recent").click()
    done = card(page, run["runId"])
    expect(done.locator(".badge.state")).to_have_text("COMPLETED")
    expect(done.locator(".outcome")).to_contain_text("delete_file: deleted /tmp/report.txt")
    expect(done.locator(".decided")).to_contain_text("Approved by key:alice")
    expect(done.locator(".age")).to_contain_text("decided by key:alice")


def test_a_runs_own_address_opens_the_inbox_on_it_as_webhooks_link(inbox: Inbox) -> None:
    run = inbox.start("file-cleaner", "please delete /tmp/linked.txt")
    inbox.start("file-cleaner", "please delete /tmp/other.txt")
    page = inbox.open("alice", path=f"/runs/{run['runId']}")
    expect(page.locator("#runs-heading")).to_have_text("One run")
    expect(page.locator("article[data-run]")).to_have_count(1)
    for chrome in ("#filters", "nav.pager"):  # a list's, not a run's (issue 52)
        expect(page.locator(chrome)).to_be_hidden()
    talk = card(page, run["runId"]).locator(".conversation .message")
    expect(talk.filter(has_text="User")).to_contain_text("please delete /tmp/linked.txt")
    expect(talk.last).to_contain_text('Calls delete_file with {"path":"/tmp/linked.txt"}')
    card(page, run["runId"]).get_by_role("button", name="Approve", exact=True).click()
    expect(card(page, run["runId"]).locator(".badge.state")).to_have_text("COMPLETED")
    expect(card(page, run["runId"]).locator(".timeline .event")).to_have_text(
        [re.compile(r"^key:alice approved, (just now|\d+ s ago)$")]
    )
    missing = inbox.open("alice", path="/runs/no-such-run")
    expect(missing.locator("#empty")).to_have_text(
        "No such run, or not one these credentials may see."
    )
    missing.get_by_role("link", name="Waiting for a decision").click()
    expect(missing.locator("article[data-run]")).to_have_count(1)  # the other run
    for chrome in ("#filters", "nav.pager"):
        expect(missing.locator(chrome)).to_be_visible()


def _edited_approval(inbox: Inbox, page: Page, run_id: str) -> None:
    """Approve with edited arguments: checked as JSON here, refused by the tool's
    parameters on the server, then applied."""
    other = card(page, run_id)
    other.get_by_text("Edit the arguments, then approve").click()
    editor = other.get_by_label("Arguments (JSON)")
    expect(editor).to_have_value('{\n  "path": "/tmp/draft.txt"\n}')
    editor.fill('{"path": /tmp/other.txt}')
    other.get_by_role("button", name="Approve with these arguments").click()
    expect(other.get_by_role("alert")).to_contain_text("This is not JSON")
    editor.fill('{"paths": ["/tmp/other.txt"]}')  # JSON, but not the tool's parameters
    other.get_by_role("button", name="Approve with these arguments").click()
    expect(other.locator(".note-warn")).to_contain_text(
        "The edited arguments were refused, so nothing was sent"
    )
    editor.fill('{"path": "/tmp/other.txt"}')
    other.get_by_role("button", name="Approve with these arguments").click()
    expect(answers(page).locator("li").first).to_contain_text(
        "Approved delete_file. The run completed: delete_file: deleted /tmp/other.txt"
    )
    expect(other).to_have_count(0)


QUORUM = {"agentId": "file-cleaner", "approvals": 2, "reviewers": ["key:alice", "key:bob"]}


@pytest.mark.parametrize("inbox", [{"policies": [QUORUM]}], indirect=True)
def test_a_quorum_shows_its_progress_and_a_stale_page_applies_nothing(inbox: Inbox) -> None:
    run = inbox.start("file-cleaner", "please delete /tmp/seen.txt")
    page = inbox.open("bob", auto_refresh=False, live=False)
    shown = card(page, run["runId"])
    expect(shown.locator(".review")).to_have_text(
        "Assigned to key:alice, key:bob. 0 of 2 approvals; 2 more needed."
    )
    edit = """mutation($input: ApproveToolCallInput!) { approveToolCall(input: $input) {
      ... on ApprovalRecorded { approvalsNeeded } } }"""
    edited = {"runId": run["runId"], "editedArgs": {"path": "/tmp/edited.txt"}}
    assert inbox.gql(edit, {"input": edited})["approveToolCall"] == {"approvalsNeeded": 1}
    shown.get_by_role("button", name="Approve", exact=True).click()  # what it saw is stale
    expect(answers(page).locator("li").first).to_contain_text(
        "Nothing was done: the arguments changed since you saw them."
    )
    expect(shown.locator(".edited")).to_contain_text('"/tmp/edited.txt"')  # looked again
    expect(shown.locator(".review")).to_contain_text(
        "1 of 2 approvals (approved by key:alice); 1 more needed."
    )
    shown.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(page).locator("li").first).to_contain_text(
        "Approved delete_file. The run completed: delete_file: deleted /tmp/edited.txt"
    )


def test_decline_with_a_reason_and_resume_with_checked_json(inbox: Inbox) -> None:
    doomed = inbox.start("file-cleaner", "please delete /etc/passwd")
    asker = inbox.start("city-asker", "Where shall we meet?")
    page = inbox.open("bob")
    declined = card(page, doomed["runId"])
    declined.get_by_label("Reason for declining").fill("not that file")
    declined.get_by_role("button", name="Decline").click()
    expect(answers(page).locator("li").first).to_contain_text(
        "Declined delete_file. The run completed"
    )
    log = inbox.gql(
        "query($id: ID!) { decisionLog(runId: $id) { action decidedBy reason } }",
        {"id": doomed["runId"]},
    )["decisionLog"]
    assert log == [{"action": "DECLINE", "decidedBy": "key:bob", "reason": "not that file"}]
    resumed = card(page, asker["runId"])
    data = resumed.get_by_label("Resume data (JSON)")
    data.fill("{name: Lisbon}")  # not JSON: refused before anything is sent
    resumed.get_by_role("button", name="Resume").click()
    expect(resumed.get_by_role("alert")).to_contain_text("This is not JSON")
    expect(data).to_be_focused()
    expect(data).to_have_attribute("aria-invalid", "true")
    expect(data).to_have_accessible_description(re.compile("This is not JSON"))
    data.fill('{"nom": 1}')  # JSON, but not what the tool returns
    resumed.get_by_role("button", name="Resume").click()
    expect(resumed.locator(".note-warn")).to_have_text(
        "The data does not fit, so nothing was sent: resume data does not fit ask_city's "
        "result: name: Field required. The run still waits."
    )
    expect(data).to_have_value('{"nom": 1}')  # kept for the user to correct
    data.fill('{"name": "Lisbon"}')
    resumed.get_by_role("button", name="Resume").click()
    expect(answers(page).locator("li").first).to_contain_text(
        'Resumed ask_city. The run completed: ask_city: {"name":"Lisbon"}'
    )
    expect(page.locator("article.run")).to_have_count(0)
    expect(page.locator("#empty")).to_have_text("Nothing waits for a decision.")
    _a_declined_call_says_so(page, doomed["runId"])


def _a_declined_call_says_so(page: Page, run_id: str) -> None:
    """On a COMPLETED card in Recent: DECLINED, by whom and why, not "needs approval"."""
    page.get_by_role("link", name="Recent").click()
    expect(card(page, run_id).locator(".call .badge.decision")).to_have_text("DECLINED by key:bob")
    expect(card(page, run_id).locator(".call .kind")).to_have_count(0)
    expect(card(page, run_id).locator(".decided")).to_contain_text(
        "Declined by key:bob (reason: not that file)"
    )


def test_two_pages_decide_the_same_call_and_the_second_hears_who_was_first(
    inbox: Inbox,
) -> None:
    run = inbox.start("trip-planner", "plan a trip, then delete /tmp/old-plan.txt")
    alice = inbox.open("alice")
    bob = inbox.open("bob", auto_refresh=False)  # still shows the call as pending
    approve = "Approve"
    card(alice, run["runId"]).get_by_role("button", name=approve, exact=True).click()
    expect(answers(alice).locator("li").first).to_contain_text(
        "Approved delete_file. The run waits on 1 more call."
    )
    expect(card(alice, run["runId"]).locator(".decided")).to_contain_text("Approved by key:alice")
    card(bob, run["runId"]).get_by_role("button", name=approve, exact=True).click()
    expect(answers(bob).locator("li").first).to_contain_text(
        "Someone was first: key:alice approved delete_file"
    )
    expect(answers(bob).locator("li").first).to_contain_text("Your decision was not applied.")
    # The second call, decided on its own, ends the run.
    pending = card(alice, run["runId"])
    pending.get_by_label("Resume data (JSON)").fill('{"name": "Porto"}')
    pending.get_by_role("button", name="Resume").click()
    expect(answers(alice).locator("li").first).to_contain_text(
        "Resumed ask_city. The run completed"
    )
    card(bob, run["runId"]).get_by_label("Resume data (JSON)").fill('{"name": "Faro"}')
    card(bob, run["runId"]).get_by_role("button", name="Resume").click()
    expect(answers(bob).locator("li").first).to_contain_text(
        "Nothing was done: the run no longer waits for a decision. It is COMPLETED. "
        "key:alice resumed ask_city"
    )


def test_a_viewer_sees_the_runs_but_no_decision_buttons(inbox: Inbox) -> None:
    run = inbox.start("file-cleaner", "please delete /tmp/report.txt")
    page = inbox.open(key=None)
    expect(page.locator("#sign-in-why")).to_have_text(
        "This server needs an API key or a bearer token."
    )
    sign_in(page, "key-nobody")
    expect(page.locator("#sign-in-why")).to_contain_text(
        "The server did not accept these credentials"
    )
    sign_in(page, "key-vera")
    expect(page.locator("#who-text")).to_have_text("Signed in as key:vera (viewer)")
    expect(card(page, run["runId"]).locator(".payload")).to_have_text('{"path":"/tmp/report.txt"}')
    expect(page.get_by_role("button", name=re.compile("Approve|Decline|Resume"))).to_have_count(0)
    expect(page.get_by_role("checkbox", name="Select")).to_have_count(0)
    expect(page.locator("#bulk")).to_be_hidden()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Key or token")).to_be_focused()
    assert page.evaluate("sessionStorage.length") == 0


def test_selected_runs_are_approved_or_declined_together(inbox: Inbox) -> None:
    first, second, third = (
        inbox.start("file-cleaner", f"please delete /tmp/{name}.txt") for name in "abc"
    )
    asker = inbox.start("city-asker", "Where shall we meet?")
    page = inbox.open("bob")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.post_data or ""))
    for run in (first, second, asker):
        card(page, run["runId"]).get_by_role("checkbox", name="Select").check()
    expect(page.locator("#selected-count")).to_have_text("3 selected")
    page.get_by_role("button", name="Approve selected").click()
    expect(answers(page)).to_contain_text(
        "1 selected run waits for data, not approval: resume it one by one."
    )
    for run, path in ((first, "/tmp/a.txt"), (second, "/tmp/b.txt")):
        expect(answers(page)).to_contain_text(f"The run completed: delete_file: deleted {path}")
        expect(card(page, run["runId"])).to_have_count(0)
    expect(page.locator("#summary")).to_have_text("2 runs wait for a decision.")
    expect(page.locator("#selected-count")).to_have_text("0 selected")
    assert len([body for body in sent if "decideToolCalls" in body]) == 1  # one request
    page.get_by_label("Select every run on this page").check()
    expect(page.locator("#selected-count")).to_have_text("2 selected")
    page.locator("#bulk-reason").fill("not today")
    page.get_by_role("button", name="Decline selected").click()
    expect(card(page, third["runId"])).to_have_count(0)
    expect(card(page, asker["runId"])).to_have_count(1)  # a suspend() is not declined
    log = inbox.gql(
        "query($id: ID!) { decisionLog(runId: $id) { action decidedBy reason } }",
        {"id": third["runId"]},
    )["decisionLog"]
    assert log == [{"action": "DECLINE", "decidedBy": "key:bob", "reason": "not today"}]


def _claim(inbox: Inbox, run_id: str, *, expired: bool) -> None:
    """The run as a process that died (expired) or still works (not) left it: claimed."""
    now = dt.datetime.now(dt.UTC)
    expires = now - dt.timedelta(minutes=5) if expired else now + dt.timedelta(hours=1)
    claim = {"by": "gone:1:dead", "at": now, "expiresAt": expires, "outcomeUnknown": False}
    inbox.database[RUNS_COLLECTION].update_one(
        {"runId": run_id}, {"$set": {"status": "RUNNING", "claim": claim}, "$inc": {"version": 1}}
    )


def test_stalled_runs_are_released_or_cancelled_by_an_operator(inbox: Inbox) -> None:
    released, cancelled, working = (
        inbox.start("file-cleaner", f"please delete /tmp/{name}.txt") for name in "abc"
    )
    _claim(inbox, released["runId"], expired=True)
    _claim(inbox, cancelled["runId"], expired=True)
    _claim(inbox, working["runId"], expired=False)
    bob = inbox.open("bob")
    bob.get_by_role("link", name="Needs an operator").click()
    expect(bob.locator("#summary")).to_have_text(
        "2 runs need an operator on this page (1 more is being continued normally, not shown)."
    )
    expect(bob.locator("article.run .badge.state")).to_have_text(["STALLED", "STALLED"])
    expect(bob.get_by_role("button", name="Cancel run")).to_have_count(2)
    expect(bob.get_by_role("button", name="Release")).to_have_count(0)  # admins only
    alice = inbox.open("alice")
    alice.get_by_role("link", name="Needs an operator").click()
    stalled = card(alice, released["runId"])
    stalled.get_by_label("Reason (kept in the audit log)").fill("the worker died")
    stalled.get_by_role("button", name="Release").click()
    expect(answers(alice).locator("li").first).to_contain_text("Released: the run waits")
    expect(stalled).to_have_count(0)
    to_cancel = card(alice, cancelled["runId"])
    to_cancel.get_by_label("Reason (kept in the audit log)").fill("a duplicate")
    to_cancel.get_by_role("button", name="Cancel run").click()
    expect(answers(alice).locator("li").first).to_contain_text("Cancelled: its pending tools")
    alice.get_by_role("link", name="Waiting for a decision").click()
    expect(card(alice, released["runId"])).to_have_count(1)  # decidable again
    alice.get_by_role("link", name="Recent").click()
    gone = card(alice, cancelled["runId"])  # who cancelled it, and why
    expect(gone.locator(".badge.state")).to_have_text("CANCELLED by key:alice")
    expect(gone.locator(".outcome")).to_have_text("Cancelled by key:alice: a duplicate.")


def test_the_list_is_pushed_where_the_websocket_opens(inbox: Inbox) -> None:
    page = inbox.open("alice", clock=True)  # no timer fires: no poll, only pushes
    polls: list[dict[str, Any]] = []
    page.on("response", lambda response: _record_poll(polls, response))
    _wait_for(page, lambda: _ticked_live(page))
    expect(page.locator("#updated")).to_contain_text("(live)")
    asked = len(polls)
    run = inbox.start("file-cleaner", "please delete /tmp/pushed.txt")
    expect(card(page, run["runId"])).to_have_count(1)
    pushed = [json.loads(frame) for frame in inbox.frames]
    runs = [
        {r["runId"] for r in frame["payload"]["data"]["list"]["runs"]}
        for frame in pushed
        if frame["type"] == "next"
    ]
    assert set() in runs and {run["runId"]} in runs, pushed  # the first page, then the run
    assert len(polls) > asked  # the push had the list read again, by a conditional GET
    card(page, run["runId"]).get_by_role("button", name="Approve", exact=True).click()
    expect(card(page, run["runId"])).to_have_count(0)


def _ticked_live(page: Page) -> bool:
    page.clock.fast_forward(1_000)  # the "updated" line is written every second
    return "(live)" in (page.locator("#updated").text_content() or "")


def test_polls_are_conditional_gets_paused_while_the_tab_is_hidden(inbox: Inbox) -> None:
    """Where the WebSocket does not open, the page polls."""
    inbox.start("file-cleaner", "please delete /tmp/report.txt")
    page = inbox.open("alice", clock=True, live=False)
    polls: list[dict[str, Any]] = []
    page.on("response", lambda response: _record_poll(polls, response))
    expect(page.locator("#updated")).to_have_text("updated just now")
    late = inbox.start("city-asker", "Where shall we meet?")
    page.clock.fast_forward(4_100)  # the next poll
    expect(card(page, late["runId"])).to_have_count(1)
    # Polls until one is answered 304: the run's last writes (its start finishing in the
    # background) may still move the index for a moment, on a loaded machine.
    for _ in range(5):
        _next_poll(page, polls)
        if len(polls) >= 2 and polls[-1]["status"] == 304:
            break
    etag = polls[-2]["etag"]
    assert etag is not None
    assert polls[-1]["ifNoneMatch"] == etag
    assert polls[-1]["status"] == 304
    expect(page.locator("article.run")).to_have_count(2)
    page.evaluate(HIDE)
    asked = len(polls)
    page.clock.fast_forward(20_000)
    expect(page.locator("#updated")).to_have_text(
        re.compile(r"updated \d+ s ago \(auto-refresh paused\)")
    )
    assert len(polls) == asked  # hidden: no request at all
    page.evaluate(SHOW)
    _wait_for(page, lambda: len(polls) > asked)
    expect(page.locator("#updated")).to_have_text("updated just now")


HIDE = """() => {
  Object.defineProperty(document, "hidden", { value: true, configurable: true });
  Object.defineProperty(document, "visibilityState", { value: "hidden", configurable: true });
  document.dispatchEvent(new Event("visibilitychange"));
}"""
SHOW = """() => {
  delete document.hidden;
  delete document.visibilityState;
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def _record_poll(polls: list[dict[str, Any]], response: Any) -> None:
    request = response.request
    if request.method == "GET" and "query+Waiting" in request.url:
        polls.append(
            {
                "status": response.status,
                "etag": response.headers.get("etag"),
                "ifNoneMatch": request.headers.get("if-none-match"),
            }
        )


def _next_poll(page: Page, polls: list[dict[str, Any]]) -> None:
    """Let the page's clock run to its next poll, and wait for the answer."""
    seen = len(polls)
    page.clock.fast_forward(4_100)
    _wait_for(page, lambda: len(polls) > seen)


def _wait_for(page: Page, check: Callable[[], bool], within: float = 10.0) -> None:
    """Until `check` holds; the page's events (page.on) are handled while it waits."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "timed out"
        page.wait_for_timeout(50)


def test_the_viewer_of_an_open_server_is_the_named_actor_as_an_admin(mongo_uri: str) -> None:
    name = f"inbox_{uuid.uuid4().hex[:10]}"
    with ThreadedServer(Settings(mongodb_uri=mongo_uri, mongodb_db=name)) as url:
        response = httpx.post(
            f"{url}/graphql",
            json={"query": "{ viewer { subject role authenticated } }"},
            headers={"x-actor": "ops@example.com"},
        )
    with MongoClient[Any](mongo_uri) as client:
        client.drop_database(name)
    assert response.json() == {
        "data": {
            "viewer": {
                "subject": "anonymous:ops@example.com",
                "role": "ADMIN",
                "authenticated": False,
            }
        }
    }


def test_invisible_characters_in_arguments_are_shown_not_rendered(inbox: Inbox) -> None:
    """A right-to-left override and a zero-width space could make a path read as another;
    the page shows each as its escape in a marked span."""
    path = "/tmp/\u202etxt.exe\u200b"
    run = inbox.start("file-cleaner", f"please delete {path}")
    page = inbox.open("alice")
    args = card(page, run["runId"]).locator(".json").first
    expect(args).to_contain_text("/tmp/\\u202etxt.exe\\u200b")
    marks = args.locator("span.invisible-char")
    expect(marks).to_have_text(["\\u202e", "\\u200b"])
    assert "\u202e" not in args.inner_text() and "\u200b" not in args.inner_text()
    expect(marks.first).to_have_attribute("title", "an invisible character, U+202E")


def test_a_very_long_text_shows_its_start_and_the_rest_on_demand(inbox: Inbox) -> None:
    longest = "/tmp/" + "y" * 2500
    run = inbox.start("file-cleaner", f"delete {longest}")
    page = inbox.open("alice")
    shown = card(page, run["runId"])
    expect(shown.locator(".json-long > pre")).to_have_text(longest[:600] + "…")
    folded = shown.locator("details.json-fold", has_text="Show all 2505 characters")
    expect(folded.locator("pre")).to_be_hidden()
    folded.locator("summary").click()
    expect(folded.locator("pre")).to_have_text(longest)


def test_the_keyboard_moves_between_runs_approves_and_declines(inbox: Inbox) -> None:
    first, second, third = (
        inbox.start("file-cleaner", f"please delete /tmp/key-{n}.txt") for n in "abc"
    )
    page = inbox.open("alice")
    expect(page.locator("article.run")).to_have_count(3)
    page.locator("body").press("j")  # the newest first
    expect(card(page, third["runId"]).locator("h3")).to_be_focused()
    page.keyboard.press("j")
    expect(card(page, second["runId"]).locator("h3")).to_be_focused()
    page.keyboard.press("k")
    expect(card(page, third["runId"]).locator("h3")).to_be_focused()
    page.keyboard.press("a")
    expect(answers(page).locator("li").first).to_contain_text(
        "Approved delete_file. The run completed: delete_file: deleted /tmp/key-c.txt"
    )
    expect(card(page, second["runId"]).locator("h3")).to_be_focused()  # the next run
    page.keyboard.press("d")
    expect(answers(page).locator("li").first).to_contain_text("Declined delete_file.")
    expect(page.locator("article.run")).to_have_count(1)
    page.keyboard.press("/")
    expect(page.get_by_label("Resource")).to_be_focused()
    page.keyboard.type("a")  # typed into the field: not a decision
    expect(card(page, first["runId"])).to_have_count(1)


def test_decision_times_are_shown_by_agent_and_tool(inbox: Inbox) -> None:
    decide = """mutation($input: DeclineToolCallInput!) { declineToolCall(input: $input) {
      __typename } }"""
    for n in range(2):
        run = inbox.start("file-cleaner", f"please delete /tmp/timed-{n}.txt")
        inbox.gql(decide, {"input": {"runId": run["runId"]}})
    page = inbox.open("alice")
    page.get_by_role("link", name="Decision times").click()
    expect(page.locator("#runs-heading")).to_have_text("Decision times")
    expect(page.locator("#times .counts")).to_have_text(
        "0 approved, 2 declined, 0 resumed by people; 0 expired."
    )
    by_tool = page.locator("table.times", has_text="By tool")
    expect(by_tool.locator("tbody tr")).to_have_count(1)
    expect(by_tool.locator("tbody th")).to_have_text("delete_file")
    expect(by_tool.locator("tbody td").first).to_have_text("2")
    expect(by_tool.locator("tbody td").nth(1)).to_have_text(re.compile(r"^\d+ s$"))


ASSIGNED = [
    {"agentId": "file-cleaner", "reviewers": ["key:bob"]},
    {"agentId": "approver", "toolName": "deleteFile", "reviewers": ["key:alice"]},
]


@pytest.mark.parametrize("inbox", [{"policies": ASSIGNED}], indirect=True)
def test_assigned_to_me_lists_only_the_runs_a_policy_gives_the_reader(inbox: Inbox) -> None:
    inbox.seed_mastra()  # three approver runs of deleteFile, three others
    run = inbox.start("file-cleaner", "please delete /tmp/mine.txt")
    page = inbox.open("bob")
    expect(page.locator("article.run")).to_have_count(7)
    page.get_by_role("link", name="Assigned to me").click()
    expect(page.locator("#runs-heading")).to_have_text("Assigned to me")
    expect(page.locator("article.run")).to_have_count(1)
    expect(page.locator("#summary")).to_have_text("1 run waits for you.")
    shown = card(page, run["runId"])
    expect(shown.locator(".review")).to_contain_text("Assigned to key:bob.")
    shown.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(page).locator("li").first).to_contain_text(
        "Approved delete_file. The run completed: delete_file: deleted /tmp/mine.txt"
    )
    expect(page.locator("#empty")).to_have_text("Nothing waits for you.")
    theirs = inbox.open("alice", path="/#mine")
    expect(theirs.locator("#runs-heading")).to_have_text("Assigned to me")
    expect(theirs.locator("article.run")).to_have_count(3)
    for agent in theirs.locator("article.run .agent").all_inner_texts():
        assert "approver" in agent


def test_two_reviewers_see_who_reviews_a_run_and_hand_it_over(inbox: Inbox) -> None:
    run_id = inbox.start("file-cleaner", "please delete /tmp/customer.txt")["runId"]
    bob, alice = inbox.open("bob"), inbox.open("alice")
    bobs, alices = card(bob, run_id), card(alice, run_id)
    bobs.get_by_role("button", name="Start review", exact=True).click()
    expect(bobs.locator(".in-review")).to_contain_text(
        re.compile(r"You are reviewing it until \d\d:\d\d \(in 1[45] min\)")
    )
    expect(answers(bob).locator("li").first).to_contain_text("You are reviewing this run until")
    expect(alices.locator(".in-review")).to_contain_text("Being reviewed by key:bob until")
    alices.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(alice).locator("li").first).to_contain_text(
        "Nothing was done: key:bob reviews this run until"
    )
    bobs.get_by_text("Hand over to a colleague").click()
    bobs.get_by_label("Hand over to (").fill("key:alice, group:ops")
    bobs.get_by_role("button", name="Hand over").click()
    expect(answers(bob).locator("li").first).to_contain_text(
        "Handed over: assigned to key:alice, group:ops."
    )
    expect(alices.locator(".in-review")).to_have_count(0)  # the review went with the run
    expect(alices.locator(".review")).to_contain_text("Assigned to key:alice, group:ops.")
    alice.get_by_role("link", name="Assigned to me").click()
    mine = card(alice, run_id)
    mine.get_by_role("button", name="Start review", exact=True).click()
    expect(mine.locator(".in-review")).to_contain_text("You are reviewing it until")
    mine.get_by_role("button", name="End review", exact=True).click()
    expect(answers(alice).locator("li").first).to_contain_text("The review ended")
    expect(mine.locator(".in-review")).to_have_count(0)
    mine.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(alice).locator("li").first).to_contain_text("Approved delete_file.")


def test_a_decision_over_another_s_review_is_made_only_when_the_reader_says_so(
    inbox: Inbox,
) -> None:
    run_id = inbox.start("file-cleaner", "please delete /tmp/forced.txt")["runId"]
    review = "mutation($id: ID!) { startReview(input: {runId: $id}) { __typename } }"
    assert inbox.gql(review, {"id": run_id}, key="bob")["startReview"]["__typename"] == (
        "ReviewStarted"
    )
    alice = inbox.open("alice")
    shown = card(alice, run_id)
    expect(shown.locator(".in-review")).to_contain_text("Being reviewed by key:bob")
    shown.get_by_label("Decide although key:bob reviews it").check()
    shown.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(alice).locator("li").first).to_contain_text(
        "Approved delete_file. The run completed"
    )


def test_notes_are_added_shown_as_text_and_deleted(inbox: Inbox) -> None:
    run_id = inbox.start("file-cleaner", "please delete /tmp/noted.txt")["runId"]
    bob, vera = inbox.open("bob"), inbox.open("vera")
    script = "<script>window.pwned = 1</script><b>asked the customer</b>\nwaiting for them"
    bobs = card(bob, run_id)
    bobs.get_by_text("Add a note").click()
    bobs.get_by_label("Note (plain text").fill(script)
    bobs.get_by_role("button", name="Add note").click()
    expect(answers(bob).locator("li").first).to_contain_text("Note added.")
    expect(bobs.get_by_label("Note (plain text")).to_have_value("")  # sent: emptied
    veras = card(vera, run_id)
    expect(veras.locator(".note-body")).to_have_text(script)  # pushed, as text
    expect(veras.locator(".note-body b")).to_have_count(0)
    expect(veras.locator(".note-meta")).to_contain_text("key:bob, ")
    assert vera.evaluate("window.pwned") is None
    for what in ("Add note", "Start review", "Delete note"):  # a viewer reads, and no more
        expect(veras.get_by_role("button", name=what)).to_have_count(0)
    expect(bobs.locator(".note-meta")).to_contain_text("You, ")
    bobs.get_by_role("button", name="Delete note").click()
    expect(answers(bob).locator("li").first).to_contain_text("Note deleted.")
    expect(veras.locator(".note-body")).to_have_count(0)


def test_a_list_card_says_why_the_run_waits_and_links_to_its_page(inbox: Inbox) -> None:
    said = "please delete /tmp/<b>why</b>.txt"
    run_id = inbox.start("file-cleaner", said)["runId"]
    page = inbox.open("alice")
    shown = card(page, run_id)
    expect(shown.locator(".why")).to_have_text(f"User said: {said}")  # as text (issue 52)
    expect(shown.locator(".why b")).to_have_count(0)
    shown.get_by_role("link", name="The run's page: conversation and timeline").click()
    expect(page).to_have_url(f"{inbox.url}/runs/{run_id}")
    expect(page.locator("#runs-heading")).to_have_text("One run")
    own = card(page, run_id)
    expect(own.locator(".conversation")).to_contain_text(said)
    expect(own.locator(".why")).to_have_count(0)  # the conversation says it
    expect(own.get_by_role("link", name="The run's page: conversation and timeline")).to_have_count(
        0
    )


DESTRUCTIVE = {"agentId": "file-cleaner", "toolName": "delete_file", "destructive": True}


def _dialogs(page: Page, answers: list[bool]) -> list[str]:
    """The text of each confirm() the page shows, answered yes or no in turn."""
    said: list[str] = []

    def answer(dialog: Any) -> None:
        said.append(dialog.message)
        dialog.accept() if answers.pop(0) else dialog.dismiss()

    page.on("dialog", answer)
    return said


@pytest.mark.parametrize("inbox", [{"policies": [DESTRUCTIVE]}], indirect=True)
def test_approving_a_tool_a_policy_marks_destructive_asks_to_confirm(inbox: Inbox) -> None:
    run_id = inbox.start("file-cleaner", "please delete /tmp/precious.txt")["runId"]
    asker = inbox.start("city-asker", "Where shall we meet?")["runId"]
    page = inbox.open("bob")
    said = _dialogs(page, [False, True])
    shown = card(page, run_id)
    shown.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(page).locator("li").first).to_contain_text(
        "Nothing was done: you did not confirm approving delete_file."
    )
    assert said == [
        'Approve delete_file with {"path":"/tmp/precious.txt"}?\n\n'
        "This server asks you to confirm before the tool runs."
    ]
    assert (
        inbox.gql("query($id: ID!) { agentRun(runId: $id) { status } }", {"id": run_id})[
            "agentRun"
        ]["status"]
        == "SUSPENDED"
    )
    shown.get_by_role("button", name="Approve", exact=True).click()
    expect(answers(page).locator("li").first).to_contain_text("Approved delete_file.")
    assert len(said) == 2
    card(page, asker).get_by_label("Resume data (JSON)").fill('{"name": "Porto"}')
    card(page, asker).get_by_role("button", name="Resume").click()  # not an approval
    expect(answers(page).locator("li").first).to_contain_text("Resumed ask_city.")
    assert len(said) == 2


@pytest.mark.parametrize("inbox", [{"settings": {"confirm_every_approval": True}}], indirect=True)
def test_every_approval_asks_to_confirm_when_the_server_says_so(inbox: Inbox) -> None:
    runs = [inbox.start("file-cleaner", f"please delete /tmp/{n}.txt")["runId"] for n in "ab"]
    page = inbox.open("bob")
    said = _dialogs(page, [False, True])
    for run_id in runs:
        card(page, run_id).get_by_role("checkbox", name="Select").check()
    page.get_by_role("button", name="Approve selected").click()
    expect(answers(page).locator("li").first).to_contain_text(
        "Nothing was approved: you did not confirm."
    )
    assert said[0].startswith("Approve 2 calls:\ndelete_file with")
    page.get_by_role("button", name="Approve selected").click()
    for run_id in runs:
        expect(card(page, run_id)).to_have_count(0)
    assert len(said) == 2
