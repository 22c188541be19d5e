"""GraphiQL, offline: the page at `/graphql` (a GET that accepts HTML) and its files
under `/graphiql/`, from the `graphene-django-graphiql-static` distribution (GraphiQL,
React and the explorer plugin, built), so the IDE needs no other origin and no Node.

The page and its files carry the inbox's Content-Security-Policy (server/inbox.py):
scripts, styles and requests from this origin only, no inline script. What starts
GraphiQL is the server's own `static/graphiql.js`.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path

from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from suspended_runs.server.inbox import HEADERS, PageHeaders

_ASSETS = "graphene_django_graphiql_static"

FIRST_QUERY = """\
# The runs waiting for a person, newest first: README.md's first query.
# Run it with the ▶ button (Ctrl-Enter); the Docs button shows every field.
{
  suspendedRuns(perPage: 2) {
    total
    hasMore
    nextCursor
    runs {
      runId
      agentId
      runtime
      status
      suspendedAt
      toolCalls { toolCallId toolName args requiresApproval suspendPayload }
    }
  }
}
"""
"""What GraphiQL opens on: a query that answers on any server, a first look at the API."""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>GraphiQL · suspended-runs</title>
  <link rel="icon" href="/static/favicon.svg">
  <link rel="stylesheet" href="/graphiql/graphiql.min.css">
  <link rel="stylesheet" href="/graphiql/style.css">
  <link rel="stylesheet" href="/static/graphiql.css">
  <script src="/graphiql/react.production.min.js"></script>
  <script src="/graphiql/react-dom.production.min.js"></script>
  <script src="/graphiql/graphiql.min.js"></script>
  <script src="/graphiql/graphiql-plugin-explorer.umd.js"></script>
</head>
<body>
  <div id="graphiql" data-query="{query}">Loading GraphiQL…</div>
  <script src="/static/graphiql.js"></script>
</body>
</html>
"""


def assets() -> Path:
    """The folder of GraphiQL's built files in the installed distribution."""
    return Path(str(resources.files(_ASSETS) / "static" / _ASSETS))


def page() -> HTMLResponse:
    query = html.escape(FIRST_QUERY, quote=True)
    return HTMLResponse(PAGE.replace("{query}", query), headers=HEADERS)


def routes() -> list[BaseRoute]:
    return [Mount("/graphiql", app=PageHeaders(StaticFiles(directory=assets())), name="graphiql")]
