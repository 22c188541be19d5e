"""GraphiQL, offline: the page at `/graphql` (a GET that accepts HTML) and its files
under `/graphiql/`, from the `graphene-django-graphiql-static` distribution (GraphiQL,
React and the explorer plugin, built), so the IDE needs no other origin and no Node.

The page and its files carry the inbox's Content-Security-Policy (server/inbox.py):
scripts, styles and requests from this origin only, no inline script. What starts
GraphiQL is the server's own `static/graphiql.js`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from suspended_runs.server.inbox import HEADERS, PageHeaders

_ASSETS = "graphene_django_graphiql_static"

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
  <div id="graphiql">Loading GraphiQL…</div>
  <script src="/static/graphiql.js"></script>
</body>
</html>
"""


def assets() -> Path:
    """The folder of GraphiQL's built files in the installed distribution."""
    return Path(str(resources.files(_ASSETS) / "static" / _ASSETS))


def page() -> HTMLResponse:
    return HTMLResponse(PAGE, headers=HEADERS)


def routes() -> list[BaseRoute]:
    return [Mount("/graphiql", app=PageHeaders(StaticFiles(directory=assets())), name="graphiql")]
