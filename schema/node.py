"""`Node`: the interface of objects a client can fetch again by their global `id`
(GraphQL's Global Object Identification; resolvers/nodes.py writes and reads the ids).

`Agent`, `Webhook` and `WebhookDelivery` keep plain ids that clients pass back as
arguments, and stay outside it.
"""

from __future__ import annotations

import strawberry


@strawberry.interface(
    description="An object with a global id: `node(id:)` fetches it again, and normalized "
    "client caches key it by `__typename` and `id`."
)
class Node:
    id: strawberry.ID = strawberry.field(
        description="Opaque, stable and URL-safe; it encodes the type and the key (a run's "
        "runId; a tool call's runId and toolCallId)."
    )
