"""GraphiQL offline (server/graphiql.py): in Chromium, with every origin but the server's
blocked, the page loads its files from this server and runs a query."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from graphql import parse, print_ast
from playwright.sync_api import Browser, Route, expect

from suspended_runs.server import Settings
from suspended_runs.server.graphiql import FIRST_QUERY, assets
from suspended_runs.server.inbox import CONTENT_SECURITY_POLICY
from tests.helpers import ROOT, ThreadedServer


def test_graphiql_runs_a_query_with_every_other_origin_blocked(
    browser: Browser, mongo_uri: str
) -> None:
    # Playwright's sync API runs a loop of its own: no async fixture (`settings`) here.
    settings = Settings(mongodb_uri=mongo_uri, mongodb_db=f"graphiql_{uuid.uuid4().hex[:10]}")
    with ThreadedServer(settings) as url:
        context = browser.new_context()
        elsewhere: list[str] = []

        def only_this_server(route: Route) -> None:
            if route.request.url.startswith(f"{url}/"):
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort()

        context.route("**/*", only_this_server)
        page = context.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        answer = page.goto(f"{url}/graphql")
        assert answer is not None
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        editor = page.locator(".graphiql-query-editor .CodeMirror").first
        expect(editor).to_be_visible(timeout=20_000)
        expect(editor).to_contain_text("suspendedRuns(perPage: 2)")  # the README's first
        page.locator(".graphiql-execute-button").click()
        expect(page.locator(".result-window")).to_contain_text('"total": 0', timeout=15_000)
        _type_query(page, "{ viewer { role } }")
        page.locator(".graphiql-execute-button").click()
        expect(page.locator(".result-window")).to_contain_text('"role": "ADMIN"', timeout=15_000)
        context.close()
    assert elsewhere == []
    assert problems == []


def _type_query(page: Any, query: str) -> None:
    """Replaces the editor's text as a person would: select all, type."""
    page.locator(".graphiql-query-editor .CodeMirror").first.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(query)


def test_the_assets_come_from_the_installed_distribution() -> None:
    names = {path.name for path in assets().iterdir()}
    assert {"graphiql.min.js", "graphiql.min.css", "react.production.min.js"} <= names


def test_graphiql_opens_on_the_readmes_first_query() -> None:
    readme = (ROOT / "README.md").read_text()
    first = json.loads(re.search(r"-d '(\{.*?\})'", readme, re.S)[1])["query"]  # type: ignore[index]
    assert print_ast(parse(first)) == print_ast(parse(FIRST_QUERY))
