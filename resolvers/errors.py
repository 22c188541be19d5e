"""GraphQL errors for bad arguments, the one kind of error a client is meant to read, and
the decision path's own error. The whole tree is drawn in docs/design.md ("Errors").

Everything else that escapes a resolver is an internal error, and the schema masks it.
"""

from __future__ import annotations

from graphql import GraphQLError

from suspended_runs.storage import SuspendedRunsError

PUBLIC_CODES = frozenset({"BAD_USER_INPUT", "FORBIDDEN", "SUBSCRIPTION_LIMIT"})
"""Codes whose errors reach the client unmasked."""


class BadUserInput(GraphQLError):
    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message, extensions={"code": "BAD_USER_INPUT", "argument": argument})


class DecisionContention(SuspendedRunsError):
    """Other decisions on a run kept winning the conditional update; nothing was applied."""


class SubscriptionLimit(GraphQLError):
    """A caller asked for more subscriptions at once than MAX_SUBSCRIPTIONS_PER_CALLER."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"a caller holds at most {limit} subscriptions at once "
            "(MAX_SUBSCRIPTIONS_PER_CALLER); end one first",
            extensions={"code": "SUBSCRIPTION_LIMIT", "limit": "MAX_SUBSCRIPTIONS_PER_CALLER"},
        )
