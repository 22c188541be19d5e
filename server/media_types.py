"""Which media type a GraphQL answer is written in, from the request's `Accept`.

GraphQL over HTTP (the current draft) has two: `application/graphql-response+json`,
whose status codes say whether the request was executed (400 for a document that does
not parse or validate, or variables that do not coerce; 200 once execution started), and
`application/json`, the legacy one, always 200 for a well-formed request. A client that
asks for neither (or sends no `Accept`) gets `application/json`, as the draft says a
server should assume; one that accepts only something else gets 406.
"""

from __future__ import annotations

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"


def negotiate(accept: str | None) -> str | None:
    """The media type to answer in, or None when the client accepts neither."""
    if not accept or not accept.strip():
        return JSON
    best: tuple[float, int] = (0.0, 0)
    chosen: str | None = None
    for part in accept.split(","):
        kind, quality = _media_range(part)
        if quality <= 0:
            continue
        # Preference among equal qualities: the explicit new type, then the legacy one,
        # then a wildcard (answered as the legacy type, which every client reads).
        rank = {GRAPHQL_RESPONSE_JSON: 3, JSON: 2, "application/*": 1, "*/*": 1}.get(kind)
        if rank is None:
            continue
        if (quality, rank) > best:
            best = (quality, rank)
            chosen = GRAPHQL_RESPONSE_JSON if kind == GRAPHQL_RESPONSE_JSON else JSON
    return chosen


def _media_range(part: str) -> tuple[str, float]:
    """`type/subtype` in lower case and its `q` (1 when absent, 0 when unreadable)."""
    kind, *params = (piece.strip() for piece in part.split(";"))
    quality = 1.0
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                quality = float(value)
            except ValueError:
                quality = 0.0
    return kind.lower(), quality
